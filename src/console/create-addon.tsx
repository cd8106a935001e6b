/**
 * Add-on creation (contract 4.6): the provider and a name, then an Applications screen listing the apps with
 * a Link toggle each; finishing creation links the toggled apps.
 */
import { useState } from "preact/hooks";
import { ADDON_KINDS, type AddonKind, addonNameProblem } from "../core/addons.js";
import { api, describe } from "./api.js";
import { ErrorInline, ErrorLine, Loading, NameInput, useData } from "./ui.js";

const PROVIDERS: Record<AddonKind, string> = {
  kv: "kv: a Redis-protocol key-value store (port 6378, the token as password)",
  postgresql: "postgresql: PostgreSQL 17, one database and one user",
  mysql: "mysql: MariaDB 11.8 (MySQL protocol), one database and one user",
  fs: "fs: a file-system bucket, mounted in node and phpserver apps where CC_FS_BUCKET=<path>:<BUCKET_HOST> says",
};

/** Step 1: the provider and the add-on's name. */
function ProviderStep(props: {
  kind: AddonKind;
  setKind: (k: AddonKind) => void;
  name: string;
  setName: (n: string) => void;
  next: () => void;
}) {
  const { kind, setKind, name, setName } = props;
  const nameProblem = name === "" ? null : addonNameProblem(name);
  return (
    <main class="narrow">
      <form
        class="card form"
        aria-labelledby="addon-title"
        onSubmit={(e) => {
          e.preventDefault();
          props.next();
        }}
      >
        <h1 id="addon-title">Create an add-on</h1>
        <p class="muted small">Step 1 of 2: provider and name.</p>
        <fieldset>
          <legend>Provider</legend>
          {ADDON_KINDS.map((k) => (
            <label class="check" key={k}>
              <input type="radio" name="kind" value={k} checked={kind === k} onChange={() => setKind(k)} />{" "}
              {PROVIDERS[k]}
            </label>
          ))}
        </fieldset>
        <NameInput
          id="addon-name"
          value={name}
          onInput={setName}
          problem={nameProblem}
          help="Lower-case letters, digits and -."
        />
        <div class="row">
          <button type="submit" class="primary" disabled={name === "" || nameProblem !== null}>
            Next: applications
          </button>
          <a href="#/" class="button">
            Cancel
          </a>
        </div>
      </form>
    </main>
  );
}

/** Step 2: the apps to link, a toggle each; Finish creates the add-on linked to those toggled. */
function ApplicationsStep(props: {
  kind: AddonKind;
  name: string;
  linked: ReadonlySet<string>;
  setLinked: (apps: ReadonlySet<string>) => void;
  back: () => void;
}) {
  const { kind, name, linked, setLinked } = props;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const apps = useData(() => api("GET /v1/apps"), [], 10_000);
  const toggle = (app: string) => {
    const next = new Set(linked);
    if (next.has(app)) next.delete(app);
    else next.add(app);
    setLinked(next);
  };
  const finish = async () => {
    setBusy(true);
    setError(null);
    try {
      await api("POST /v1/addons", { body: { kind, name, link: [...linked] } });
      location.hash = "#/";
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="narrow">
      <section class="card form" aria-labelledby="addon-apps-title">
        <h1 id="addon-apps-title">Applications</h1>
        <p class="muted small">
          Step 2 of 2: link the new {kind} add-on <strong>{name}</strong> to applications. A linked app gets
          its variables at its next deploy or restart.
        </p>
        <ErrorLine error={apps.error} />
        {!apps.data ? (
          <Loading what="apps" />
        ) : apps.data.length === 0 ? (
          <p class="muted">No application yet: you can link it later from an app's Service Dependencies.</p>
        ) : (
          <ul class="toggles" data-testid="link-apps">
            {apps.data.map((a) => (
              <li key={a.id}>
                <span>
                  <strong>{a.name}</strong> <span class="muted">{a.type}</span>
                </span>
                <button
                  type="button"
                  role="switch"
                  class={linked.has(a.name) ? "switch on" : "switch"}
                  aria-checked={linked.has(a.name)}
                  aria-label={`Link ${a.name}`}
                  onClick={() => toggle(a.name)}
                >
                  Link
                </button>
              </li>
            ))}
          </ul>
        )}
        <div class="row">
          <button type="button" onClick={props.back} disabled={busy}>
            Back
          </button>
          <button type="button" class="primary" onClick={finish} disabled={busy} aria-busy={busy}>
            {busy ? "Creating (starting its container)…" : "Finish: create the add-on"}
          </button>
          <ErrorInline error={error} />
        </div>
      </section>
    </main>
  );
}

export function CreateAddon() {
  const [step, setStep] = useState<"provider" | "applications">("provider");
  const [kind, setKind] = useState<AddonKind>(ADDON_KINDS[0]);
  const [name, setName] = useState("");
  // Kept here: Back to step 1 and Next again keeps the apps toggled.
  const [linked, setLinked] = useState<ReadonlySet<string>>(new Set());
  if (step === "provider")
    return (
      <ProviderStep
        kind={kind}
        setKind={setKind}
        name={name}
        setName={setName}
        next={() => setStep("applications")}
      />
    );
  return (
    <ApplicationsStep
      kind={kind}
      name={name}
      linked={linked}
      setLinked={setLinked}
      back={() => setStep("provider")}
    />
  );
}
