/** Information (contract 2.1, 4.1, 4.5): id, type, flavor, state, git URL, app URL, push commands, task. */
import { useState } from "preact/hooks";
import { api } from "./api.js";
import type { Status } from "./types.js";
import { Action, Badge, CopyButton, Section, useData, when } from "./ui.js";

export function Information({ status, writable }: { status: Status; writable: boolean }) {
  const { app } = status;
  const env = useData(() => api("GET /v1/apps/:app/env", { params: { app: app.name } }), [app.name], 10_000);
  const ccTask = env.data?.vars.CC_TASK === "true";
  const domains = useData(
    () => (app.task ? Promise.resolve([]) : api("GET /v1/apps/:app/domains", { params: { app: app.name } })),
    [app.name],
    10_000,
  );
  const remote = `git remote add pier ${app.gitUrl}`;
  const push = "git push pier master";
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
            {app.task || ccTask ? (
              <span class="muted">a task serves no HTTP</span>
            ) : (
              <a href={app.url} target="_blank" rel="noopener noreferrer">
                {app.url}
              </a>
            )}
          </dd>
          {!app.task && !ccTask && (domains.data ?? []).length > 0 && (
            <>
              <dt>HTTPS</dt>
              <dd data-testid="https-urls">
                {(domains.data ?? []).map((d) => (
                  <div key={d.name}>
                    <a href={d.url} target="_blank" rel="noopener noreferrer">
                      {d.url}
                    </a>{" "}
                    <span class="muted small">
                      {d.state === "issued"
                        ? `certificate until ${when(d.notAfter)}`
                        : `certificate ${d.state}`}
                    </span>
                  </div>
                ))}
              </dd>
            </>
          )}
        </dl>
      </Section>
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
      <Section title="Task">
        {app.task ? (
          <p>
            This app is a task: each deploy runs <code>{app.task}</code> once to completion (no HTTP, no
            health check).
          </p>
        ) : (
          <>
            <p>
              {ccTask
                ? "This app runs as a task: each deploy runs its start command once to completion (CC_TASK=true)."
                : "This app serves HTTP. As a task, each deploy runs its start command once to completion instead (no HTTP, no health check)."}
            </p>
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
          </>
        )}
      </Section>
      {writable && <DeleteApp name={app.name} />}
    </>
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
