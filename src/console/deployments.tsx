/**
 * Deployments: the list (state, commit, cause, duration), the selected deployment's log (live over SSE while
 * it runs), the actions (restart, redeploy without cache, stop, cancel, scale) and the releases to roll back
 * to.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { api, describe, follow } from "./api.js";
import { type Deployment, type Flavor, type Release, type Status, TERMINAL_STATES } from "./types.js";
import {
  Action,
  Badge,
  duration,
  ErrorLine,
  FlavorSelect,
  type Loaded,
  Loading,
  Section,
  useData,
  when,
} from "./ui.js";

const running = (d: Deployment) => !TERMINAL_STATES.includes(d.state);

interface LogSetters {
  setLines: (f: (l: string[]) => string[]) => void;
  setEnd: (d: Deployment) => void;
  setError: (e: string | null) => void;
}

/**
 * Follows a running deployment's log until its end event. Lines come in bursts (a build's output): one
 * render per 100 ms.
 */
async function followLive(app: string, id: string, signal: AbortSignal, to: LogSetters): Promise<void> {
  const buffered: string[] = [];
  let flush: ReturnType<typeof setTimeout> | null = null;
  const cancelFlush = () => {
    if (flush) clearTimeout(flush);
    flush = null;
  };
  const flushNow = () => {
    cancelFlush();
    const batch = buffered.splice(0);
    if (batch.length) to.setLines((l) => [...l, ...batch]);
  };
  await follow(
    "GET /v1/apps/:app/deployments/:id/log",
    { params: { app, id } },
    signal,
    {
      reset: () => {
        cancelFlush();
        buffered.length = 0;
        to.setLines(() => []);
      },
      event: (ev) => {
        if (ev.event === "end") {
          flushNow();
          to.setEnd(ev.data);
          return true;
        }
        buffered.push(ev.data.line);
        flush ??= setTimeout(flushNow, 100);
        return false;
      },
      status: to.setError,
    },
    2000,
  );
}

/** A deployment's log: followed live until it ends, or read whole once it has. */
function useDeploymentLog(app: string, deployment: Deployment) {
  const [lines, setLines] = useState<string[]>([]);
  const [end, setEnd] = useState<Deployment | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [live, setLive] = useState(false);
  const stillRunning = running(deployment);
  useEffect(() => {
    const ac = new AbortController();
    setLines([]);
    setEnd(null);
    setError(null);
    (async () => {
      if (!stillRunning) {
        const text = await api("GET /v1/apps/:app/deployments/:id/log", {
          params: { app, id: deployment.id },
        });
        setLines(text.split("\n").filter((l, i, all) => l !== "" || i < all.length - 1));
        return;
      }
      setLive(true);
      await followLive(app, deployment.id, ac.signal, { setLines, setEnd, setError });
    })()
      .catch((e) => {
        if (!ac.signal.aborted) setError(describe(e));
      })
      .finally(() => {
        if (!ac.signal.aborted) setLive(false);
      });
    return () => ac.abort();
  }, [app, deployment.id]);
  return { lines, end, error, live };
}

/** The log of one deployment, kept scrolled to its end while the reader is there. */
function DeploymentLog({ app, deployment }: { app: string; deployment: Deployment }) {
  const { lines, end, error, live } = useDeploymentLog(app, deployment);
  const pre = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const el = pre.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight;
  }, [lines]);
  const state = end?.state ?? deployment.state;
  return (
    <div class="log-panel">
      <p class="log-title">
        Log of <code>{deployment.id}</code> <Badge state={state} />{" "}
        {live && (
          <span class="live" role="status">
            live
          </span>
        )}
        {(end ?? deployment).reason && <span class="error"> {(end ?? deployment).reason}</span>}
      </p>
      <ErrorLine error={error} />
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling log must be reachable by keyboard to scroll it */}
      <pre class="log" data-testid="deploy-log" ref={pre} role="log" tabIndex={0} aria-label="Deployment log">
        {lines.join("\n")}
      </pre>
    </div>
  );
}

function Scale({ status, refresh }: { status: Status; refresh: () => Promise<void> }) {
  const [instances, setInstances] = useState(String(status.app.instances));
  const [flavor, setFlavor] = useState<Flavor>(status.app.flavor);
  const n = Number(instances);
  const valid = Number.isInteger(n) && n >= 1 && n <= 20;
  return (
    <div class="row scale">
      <label for="scale-instances">Instances</label>
      <input
        id="scale-instances"
        type="number"
        min={1}
        max={20}
        value={instances}
        aria-invalid={!valid}
        onInput={(e) => setInstances(e.currentTarget.value)}
      />
      <label for="scale-flavor">Flavor</label>
      <FlavorSelect
        id="scale-flavor"
        value={flavor}
        onChange={(f) => setFlavor(f || flavor)}
        runtime={status.app.type}
      />
      <Action
        label="Scale"
        busy="Scaling…"
        disabled={!valid || (n === status.app.instances && flavor === status.app.flavor)}
        done="Scaling: see the new deployment."
        run={async () => {
          await api("PATCH /v1/apps/:app", {
            params: { app: status.app.name },
            body: { instances: n, flavor },
          });
          await refresh();
        }}
      />
      {!valid && <span class="error">1 to 20 instances.</span>}
    </div>
  );
}

/** The app's actions: restart, redeploy without cache, stop, cancel the running deployment, scale. */
function Actions(props: { status: Status; current: Deployment | undefined; refresh: () => Promise<void> }) {
  const { status, current, refresh } = props;
  const params = { app: status.app.name };
  return (
    <Section title="Actions">
      <div class="row">
        <Action
          label="Restart"
          busy="Queuing…"
          kind="primary"
          run={async () => {
            await api("POST /v1/apps/:app/deployments", { params, body: {} });
            await refresh();
          }}
        />
        <Action
          label="Redeploy without cache"
          busy="Queuing…"
          run={async () => {
            await api("POST /v1/apps/:app/deployments", { params, body: { withoutCache: true } });
            await refresh();
          }}
        />
        <Action
          label="Stop"
          busy="Stopping…"
          kind="danger"
          disabled={status.state === "stopped"}
          run={async () => {
            await api("POST /v1/apps/:app/stop", { params });
            await refresh();
          }}
        />
        {current && (
          <Action
            label="Cancel deployment"
            busy="Cancelling…"
            kind="danger"
            run={async () => {
              const at = { params: { ...params, id: current.id } };
              await api("POST /v1/apps/:app/deployments/:id/cancel", at);
              await refresh();
            }}
          />
        )}
      </div>
      <Scale key={`${status.app.instances}-${status.app.flavor}`} status={status} refresh={refresh} />
    </Section>
  );
}

/** The deployments, newest first, each with a button that shows its log below the table. */
function DeploymentTable(props: {
  deployments: Deployment[];
  shown: Deployment | undefined;
  pick: (id: string) => void;
}) {
  const { deployments, shown, pick } = props;
  return (
    <div class="table-wrap">
      <table data-testid="deployments">
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Commit</th>
            <th scope="col">Cause</th>
            <th scope="col">Started</th>
            <th scope="col">Duration</th>
            <th scope="col">
              <span class="visually-hidden">Log</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {deployments.map((d) => (
            <tr key={d.id} class={d.id === shown?.id ? "selected" : undefined}>
              <td>
                <Badge state={d.state} />
              </td>
              <td>
                <code>{d.commit.slice(0, 7)}</code>
              </td>
              <td class="wrap">{d.cause}</td>
              <td>{when(d.createdAt)}</td>
              <td>{duration(d.createdAt, d.finishedAt)}</td>
              <td>
                <button
                  type="button"
                  class="plain small"
                  aria-pressed={d.id === shown?.id}
                  aria-label={`Show the log of ${d.id}`}
                  onClick={() => pick(d.id)}
                >
                  Log
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The releases, each but the current with its rollback where the user may write. */
function Releases(props: {
  app: string;
  releases: Loaded<Release[]>;
  writable: boolean;
  refresh: () => Promise<void>;
}) {
  const { app, releases, writable, refresh } = props;
  return (
    <Section title="Releases">
      <ErrorLine error={releases.error} />
      {!releases.data ? (
        <Loading what="releases" />
      ) : releases.data.length === 0 ? (
        <p class="muted">No release yet.</p>
      ) : (
        <ul class="links" data-testid="releases">
          {releases.data.map((r) => (
            <li key={r.id}>
              <span>
                <strong>v{r.number}</strong> <code>{r.commit.slice(0, 7)}</code>{" "}
                <span class="muted">{when(r.createdAt)}</span> {r.current && <Badge state="current" />}
              </span>
              {writable && !r.current && (
                <Action
                  label={`Roll back to v${r.number}`}
                  busy="Queuing…"
                  run={async () => {
                    const at = { params: { app, number: String(r.number) } };
                    await api("POST /v1/apps/:app/releases/:number/rollback", at);
                    await refresh();
                  }}
                />
              )}
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

export function Deployments(props: { status: Status; writable: boolean; refresh: () => Promise<void> }) {
  const { status, writable } = props;
  const name = status.app.name;
  const params = { app: name };
  const list = useData(() => api("GET /v1/apps/:app/deployments", { params }), [name], 2000);
  const releases = useData(() => api("GET /v1/apps/:app/releases", { params }), [name], 5000);
  const [picked, setPicked] = useState<string | null>(null);
  const deployments = list.data ?? [];
  // The user's pick, else the newest deployment (a new one, from a push or an action, is shown at once).
  const shown = deployments.find((d) => d.id === picked) ?? deployments[0];
  const refreshAll = async () => {
    setPicked(null);
    await Promise.all([list.reload(), releases.reload(), props.refresh()]);
  };
  return (
    <>
      {writable && <Actions status={status} current={deployments.find(running)} refresh={refreshAll} />}
      <Section title="Deployments">
        <ErrorLine error={list.error} />
        {!list.data ? (
          <Loading what="deployments" />
        ) : deployments.length === 0 ? (
          <p class="muted">No deployment yet: push with git (see Information).</p>
        ) : (
          <DeploymentTable deployments={deployments} shown={shown} pick={setPicked} />
        )}
        {shown && <DeploymentLog key={shown.id} app={name} deployment={shown} />}
      </Section>
      <Releases app={name} releases={releases} writable={writable} refresh={refreshAll} />
    </>
  );
}
