/**
 * One app: its state and, in tabs, Information, Variables, Service Dependencies, Domains, Deployments, Logs.
 */
import { api } from "./api.js";
import { Dependencies } from "./dependencies.js";
import { Deployments } from "./deployments.js";
import { Domains } from "./domains.js";
import { Environment } from "./environment.js";
import { Information } from "./information.js";
import { RuntimeLogs } from "./runtime-logs.js";
import type { Whoami } from "./types.js";
import { Badge, ErrorLine, Loading, useData } from "./ui.js";

const TABS: [string, string][] = [
  ["information", "Information"],
  ["variables", "Environment variables"],
  ["dependencies", "Service Dependencies"],
  ["domains", "Domains"],
  ["deployments", "Deployments"],
  ["logs", "Logs"],
];

export function AppPage({ name, tab, who }: { name: string; tab: string; who: Whoami }) {
  const status = useData(() => api("GET /v1/apps/:app/status", { params: { app: name } }), [name], 3000);
  const s = status.data;
  const writable = !who.readOnly;
  return (
    <main class="app-page">
      <div class="app-head">
        <h1>
          {name} {s && <Badge state={s.state} />}
        </h1>
        {s && (
          <p class="muted">
            {s.app.type}
            {(s.release ? s.release.task : s.app.task !== null) ? " task" : ""} · {s.app.instances} ×{" "}
            {s.app.flavor}
            {s.release ? ` · release v${s.release.number}` : " · never deployed"}
          </p>
        )}
      </div>
      <nav class="tabs" aria-label="App">
        {TABS.map(([id, label]) => (
          <a
            key={id}
            href={`#/apps/${encodeURIComponent(name)}/${id}`}
            aria-current={tab === id ? "page" : undefined}
          >
            {label}
          </a>
        ))}
      </nav>
      <ErrorLine error={status.error} />
      {!s ? (
        <Loading what={name} />
      ) : tab === "variables" ? (
        <Environment app={s.app} writable={writable} />
      ) : tab === "dependencies" ? (
        <Dependencies app={s.app} writable={writable} admin={who.admin} />
      ) : tab === "domains" ? (
        <Domains app={s.app} writable={writable} admin={who.admin} />
      ) : tab === "deployments" ? (
        <Deployments status={s} writable={writable} refresh={status.reload} />
      ) : tab === "logs" ? (
        <RuntimeLogs status={s} />
      ) : (
        <Information status={s} writable={writable} />
      )}
    </main>
  );
}
