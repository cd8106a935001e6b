/** The instances (state, restarts, last exit; on a swarm their node and moves) and their runtime logs, followed live. */
import { useEffect, useRef, useState } from "preact/hooks";
import { movedSentence } from "../core/nodes.js";
import { describe, follow } from "./api.js";
import type { Status } from "./types.js";
import { Badge, ErrorLine, Section, when } from "./ui.js";

const MAX_LINES = 2000;

/**
 * The app's runtime log, followed: the last lines, then each new one. The server's stream follows the app,
 * not the instances of the moment: a new release's instances and one the engine restarted join it.
 */
function useFollowedLog(name: string) {
  const [lines, setLines] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [live, setLive] = useState(false);
  useEffect(() => {
    const ac = new AbortController();
    setError(null);
    (async () => {
      setLive(true);
      const opts = { params: { app: name }, query: { tail: 200 } };
      await follow("GET /v1/apps/:app/logs", opts, ac.signal, {
        reset: () => setLines([]),
        event: ({ data: l }) => {
          const text = `${new Date(l.at).toLocaleTimeString()} [${l.instance}] ${l.line}`;
          setLines((all) => [...all.slice(-MAX_LINES + 1), text]);
          return false;
        },
        status: setError,
      });
    })()
      .catch((e) => {
        if (!ac.signal.aborted) setError(describe(e));
      })
      .finally(() => {
        if (!ac.signal.aborted) setLive(false);
      });
    return () => {
      ac.abort();
      setLines([]);
    };
  }, [name]);
  return { lines, error, live };
}

/** Each instance: its state, start, restarts, last exit, and on a swarm its node (ADR 0030). */
function InstancesTable({ status }: { status: Status }) {
  const onNodes = status.instances.some((i) => i.node);
  if (status.instances.length === 0)
    return <p class="muted">No instance runs{status.state === "stopped" ? ": the app is stopped" : ""}.</p>;
  return (
    <div class="table-wrap">
      <table data-testid="instances">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">State</th>
            <th scope="col">Started</th>
            <th scope="col">Restarts</th>
            <th scope="col">Last exit</th>
            {onNodes && <th scope="col">Node</th>}
          </tr>
        </thead>
        <tbody>
          {status.instances.map((i) => (
            <tr key={i.id}>
              <td>{i.number}</td>
              <td>
                <Badge state={i.state} />
              </td>
              <td>{when(i.startedAt)}</td>
              <td>{i.restarts}</td>
              <td>{i.lastExit ? `code ${i.lastExit.code} at ${when(i.lastExit.at)}` : "none"}</td>
              {onNodes && <td>{i.node ?? ""}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function RuntimeLogs({ status }: { status: Status }) {
  const { lines, error, live } = useFollowedLog(status.app.name);
  const pre = useRef<HTMLPreElement>(null);
  // Kept at the end while the reader is there; left where it is when they scrolled up.
  useEffect(() => {
    const el = pre.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight;
  }, [lines]);
  return (
    <>
      <Section title="Instances">
        <InstancesTable status={status} />
        {status.instances.map((i) => {
          const moved = movedSentence(i, when);
          return moved && <p key={`moved-${i.id}`}>{moved}.</p>;
        })}
        {status.routeProblem && <p class="error">{status.routeProblem}</p>}
      </Section>
      <Section
        title="Runtime logs"
        actions={
          live && (
            <span class="live" role="status">
              live
            </span>
          )
        }
      >
        <ErrorLine error={error} />
        {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling log must be reachable by keyboard to scroll it */}
        <pre class="log" data-testid="runtime-log" ref={pre} role="log" tabIndex={0} aria-label="Runtime log">
          {lines.length ? lines.join("\n") : "No line yet."}
        </pre>
      </Section>
    </>
  );
}
