/** Create an app: name, runtime type, flavor, build flavor, and for a task app its command. */
import { useState } from "preact/hooks";
import type { z } from "zod";
import type { schemas } from "../core/api/requests.js";
import { appNameProblem } from "../core/names.js";
import { api, describe } from "./api.js";
import { type Flavor, RUNTIMES, type Runtime } from "./types.js";
import { chosen, ErrorInline, FlavorSelect, NameInput } from "./ui.js";

/** The runtime: a Dockerfile, Node.js or PHP. */
function RuntimeSelect({ value, onChange }: { value: Runtime; onChange: (r: Runtime) => void }) {
  return (
    <>
      <label for="app-type">Runtime type</label>
      <select
        id="app-type"
        value={value}
        onChange={(e) => onChange(chosen(RUNTIMES, e.currentTarget.value) ?? "node")}
      >
        {RUNTIMES.map((r) => (
          <option key={r} value={r}>
            {r === "docker" ? "docker (a Dockerfile)" : r === "node" ? "node (Node.js)" : "phpserver (PHP)"}
          </option>
        ))}
      </select>
    </>
  );
}

/** Whether the app is a task, and its command then. */
function TaskFields(p: {
  runtime: Runtime;
  isTask: boolean;
  setIsTask: (on: boolean) => void;
  task: string;
  setTask: (command: string) => void;
}) {
  return (
    <>
      <label class="check">
        <input type="checkbox" checked={p.isTask} onChange={(e) => p.setIsTask(e.currentTarget.checked)} /> A
        task: runs a command once to completion (no HTTP, no health check)
      </label>
      {p.isTask && (
        <>
          <label for="app-task">Task command</label>
          <input
            id="app-task"
            value={p.task}
            onInput={(e) => p.setTask(e.currentTarget.value)}
            placeholder={p.runtime === "phpserver" ? "phpserver php-cli path/to/task.php" : "node task.js"}
            spellcheck={false}
            required
          />
        </>
      )}
    </>
  );
}

/** What POST /v1/apps takes (the route table's schema). */
type NewApp = z.input<typeof schemas.createApp>;

/** The creation: the app's page once it is made, else what went wrong. */
function useCreate() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const create = async (body: NewApp) => {
    setBusy(true);
    setError(null);
    try {
      const app = await api("POST /v1/apps", { body });
      location.hash = `#/apps/${encodeURIComponent(app.name)}/information`;
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, create };
}

export function CreateApp() {
  const [name, setName] = useState("");
  const [type, setType] = useState<Runtime>("node");
  const [flavor, setFlavor] = useState<Flavor | "">("");
  const [buildFlavor, setBuildFlavor] = useState<Flavor | "">("");
  const [isTask, setIsTask] = useState(false);
  const [task, setTask] = useState("");
  const { busy, error, create } = useCreate();
  const nameProblem = name === "" ? null : appNameProblem(name);
  const submit = (e: Event) => {
    e.preventDefault();
    void create({
      name,
      type,
      ...(flavor ? { flavor } : {}),
      ...(buildFlavor ? { buildFlavor } : {}),
      ...(isTask && task.trim() ? { task: task.trim() } : {}),
    });
  };
  return (
    <main class="narrow">
      <form class="card form" onSubmit={submit} aria-labelledby="create-app-title">
        <h1 id="create-app-title">Create an app</h1>
        <NameInput
          id="app-name"
          value={name}
          onInput={setName}
          problem={nameProblem}
          help="Lower-case letters, digits and -; it becomes the app's host name."
        />
        <RuntimeSelect value={type} onChange={setType} />
        <div class="two">
          <div>
            <label for="app-flavor">Flavor</label>
            <FlavorSelect
              id="app-flavor"
              value={flavor}
              onChange={setFlavor}
              runtime={type}
              defaultLabel={type === "phpserver" ? "XS" : "nano"}
            />
          </div>
          <div>
            <label for="app-build-flavor">Build flavor</label>
            <FlavorSelect
              id="app-build-flavor"
              value={buildFlavor}
              onChange={setBuildFlavor}
              defaultLabel="M"
            />
          </div>
        </div>
        <TaskFields runtime={type} isTask={isTask} setIsTask={setIsTask} task={task} setTask={setTask} />
        <div class="row">
          <button
            type="submit"
            class="primary"
            disabled={busy || nameProblem !== null || name === ""}
            aria-busy={busy}
          >
            {busy ? "Creating…" : "Create app"}
          </button>
          <a href="#/" class="button">
            Cancel
          </a>
          <ErrorInline error={error} />
        </div>
      </form>
    </main>
  );
}
