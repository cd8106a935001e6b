/** Information (contract 2.1, 4.1, 4.5): id, type, flavor, state, git URL, app URL, push commands, task. */
import { useState } from "preact/hooks";
import { isTask } from "../core/app-state.js";
import { api } from "./api.js";
import type { DomainView, EnvAnswer, Status } from "./types.js";
import { Action, Badge, CopyButton, type Loaded, Section, useData, when } from "./ui.js";

/** The app's HTTPS addresses at its custom domains, each with its certificate's state. */
function HttpsUrls({ domains }: { domains: readonly DomainView[] }) {
  return (
    <>
      <dt>HTTPS</dt>
      <dd data-testid="https-urls">
        {domains.map((d) => (
          <div key={d.name}>
            <a href={d.url} target="_blank" rel="noopener noreferrer">
              {d.url}
            </a>{" "}
            <span class="muted small">
              {d.state === "issued" ? `certificate until ${when(d.notAfter)}` : `certificate ${d.state}`}
            </span>
          </div>
        ))}
      </dd>
    </>
  );
}

/** The two git commands that deploy from the user's repository, each with a copy button. */
function DeployWithGit({ gitUrl }: { gitUrl: string }) {
  const remote = `git remote add pier ${gitUrl}`;
  const push = "git push pier master";
  return (
    <Section title="Deploy with git">
      <p class="muted small">From your repository: add the remote once, then push to deploy.</p>
      <div class="command">
        <pre>{remote}</pre>
        <CopyButton text={remote} label="Copy the git remote command" />
      </div>
      <div class="command">
        <pre>{push}</pre>
        <CopyButton text={push} label="Copy the git push command" />
      </div>
    </Section>
  );
}

export function Information({ status, writable }: { status: Status; writable: boolean }) {
  const { app } = status;
  const env = useData(() => api("GET /v1/apps/:app/env", { params: { app: app.name } }), [app.name], 10_000);
  // What the app is now: its serving release's flag; before its first release, what its first deploy makes it.
  const taskNow = status.release ? status.release.task : isTask(app, env.data?.vars ?? {});
  const domains = useData(
    () => (app.task ? Promise.resolve([]) : api("GET /v1/apps/:app/domains", { params: { app: app.name } })),
    [app.name],
    10_000,
  );
  return (
    <>
      <Section title="Information">
        <dl class="facts" data-testid="information">
          <dt>Id</dt>
          <dd>
            <code>{app.id}</code>
          </dd>
          <dt>Type</dt>
          <dd>{app.type}</dd>
          <dt>Flavor</dt>
          <dd>
            {app.instances} × {app.flavor} (builds on {app.buildFlavor})
          </dd>
          <dt>State</dt>
          <dd>
            <Badge state={status.state} />
            {status.release ? ` release v${status.release.number}` : ""}
          </dd>
          <dt>Git deployment URL</dt>
          <dd class="with-copy">
            <code data-testid="git-url">{app.gitUrl}</code>{" "}
            <CopyButton text={app.gitUrl} label="Copy the git URL" />
          </dd>
          <dt>App URL</dt>
          <dd>
            {taskNow ? (
              <span class="muted">a task serves no HTTP</span>
            ) : (
              <a href={app.url} target="_blank" rel="noopener noreferrer">
                {app.url}
              </a>
            )}
          </dd>
          {!taskNow && (domains.data ?? []).length > 0 && <HttpsUrls domains={domains.data ?? []} />}
        </dl>
      </Section>
      <DeployWithGit gitUrl={app.gitUrl} />
      <TaskSection status={status} writable={writable} env={env} />
      {writable && <DeleteApp name={app.name} />}
    </>
  );
}

const AS_TASK = "its start command once to completion (no HTTP, no health check)";

/**
 * Whether the app is a task: what it is now is its serving release's flag (recorded by the deploy, ADR 0028);
 * when its variables say otherwise (CC_TASK, the toggle), what the next deploy or restart makes it.
 */
function TaskSection(props: { status: Status; writable: boolean; env: Loaded<EnvAnswer> }) {
  const { status, writable, env } = props;
  const { app, release } = status;
  if (app.task)
    return (
      <Section title="Task">
        <p>
          This app is a task: each deploy runs <code>{app.task}</code> once to completion (no HTTP, no health
          check).
        </p>
      </Section>
    );
  const ccTask = env.data?.vars.CC_TASK === "true";
  const next = env.data ? isTask(app, env.data.vars) : null;
  const now = release
    ? release.task
      ? `This app runs as a task: release v${release.number} runs ${AS_TASK}.`
      : "This app serves HTTP."
    : "This app has no release yet.";
  const nextText =
    next === null || next === release?.task
      ? null
      : `${release ? "Its next deploy or restart" : "Its first deploy"} ${next ? `runs it as a task (CC_TASK=true): ${AS_TASK}` : "serves HTTP"}.`;
  return (
    <Section title="Task">
      <p data-testid="task-now">{now}</p>
      {nextText && <p data-testid="task-next">{nextText}</p>}
      {!nextText && release && !release.task && (
        <p class="muted small">As a task, each deploy runs {AS_TASK}.</p>
      )}
      {writable && env.data && (
        <Action
          label={ccTask ? "Serve HTTP instead" : "Run as a task"}
          busy="Saving…"
          done="Saved: applies at the next deploy or restart."
          run={async () => {
            await api("PATCH /v1/apps/:app/env", {
              params: { app: app.name },
              body: ccTask ? { unset: ["CC_TASK"] } : { set: { CC_TASK: "true" } },
            });
            await env.reload();
          }}
        />
      )}
    </Section>
  );
}

/** Deleting asks for the app's name, typed (as `pier delete` does). */
function DeleteApp({ name }: { name: string }) {
  const [typed, setTyped] = useState("");
  return (
    <Section title="Delete this app">
      <p class="muted small">
        Stops and removes its instances, releases, variables, links and git repository. This cannot be undone.
      </p>
      <div class="row">
        <label for="delete-confirm">Type {name} to confirm</label>
        <input
          id="delete-confirm"
          value={typed}
          autocomplete="off"
          spellcheck={false}
          onInput={(e) => setTyped(e.currentTarget.value)}
        />
        <Action
          label="Delete app"
          busy="Deleting…"
          kind="danger"
          disabled={typed !== name}
          run={async () => {
            await api("DELETE /v1/apps/:app", { params: { app: name } });
            location.hash = "#/";
          }}
        />
      </div>
    </Section>
  );
}
