/** The apps (type, state, release, running instances, URL) and, beside them, the add-ons. */
import { api } from "./api.js";
import type { Addon, ListedApp, Whoami } from "./types.js";
import { Badge, ErrorLine, Loading, Section, useData } from "./ui.js";

/** One app a row: its name, runtime, state, release, instances and URL. */
function AppsTable({ apps }: { apps: ListedApp[] }) {
  return (
    <div class="table-wrap">
      <table data-testid="apps">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">State</th>
            <th scope="col">Release</th>
            <th scope="col">Instances</th>
            <th scope="col">URL</th>
          </tr>
        </thead>
        <tbody>
          {apps.map((app) => (
            <tr key={app.id}>
              <td>
                <a href={`#/apps/${encodeURIComponent(app.name)}`}>{app.name}</a>
              </td>
              <td>
                {app.type}
                {app.task ? " (task)" : ""}
              </td>
              <td>{app.status ? <Badge state={app.status.state} /> : "?"}</td>
              <td>{app.status?.release ? `v${app.status.release.number}` : "none"}</td>
              <td>
                {app.status?.release
                  ? `${app.status.running} of ${app.instances} running`
                  : `${app.instances} × ${app.flavor}`}
              </td>
              <td class="wrap">
                {app.task ? (
                  <span class="muted">a task: no URL</span>
                ) : (
                  <a href={app.url} target="_blank" rel="noopener noreferrer">
                    {app.url}
                  </a>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One add-on an item: its name, kind, flavor and the apps linked to it. */
function AddonList({ addons }: { addons: Addon[] }) {
  return (
    <ul class="addons" data-testid="addons">
      {addons.map((a) => (
        <li key={a.id}>
          <strong>{a.name}</strong> <span class="muted">{a.kind}</span> <span class="muted">{a.flavor}</span>
          <div class="muted small">{a.apps.length ? `linked to ${a.apps.join(", ")}` : "not linked"}</div>
        </li>
      ))}
    </ul>
  );
}

export function Home({ who }: { who: Whoami }) {
  // One request for the list, states and releases included (the server asks the engine once for all apps).
  const apps = useData(() => api("GET /v1/apps"), [], 5000);
  const addons = useData(() => api("GET /v1/addons"), [], 5000);
  const canCreate = who.admin && !who.readOnly;
  return (
    <main class="home">
      <Section
        title="Apps"
        actions={
          canCreate && (
            <a class="button primary" href="#/new-app">
              Create an app
            </a>
          )
        }
      >
        <ErrorLine error={apps.error} />
        {!apps.data ? (
          <Loading what="apps" />
        ) : apps.data.length === 0 ? (
          <p class="muted">No app yet.{canCreate ? " Create one, then push to it with git." : ""}</p>
        ) : (
          <AppsTable apps={apps.data} />
        )}
      </Section>
      <Section
        title="Add-ons"
        actions={
          canCreate && (
            <a class="button" href="#/new-addon">
              Create an add-on
            </a>
          )
        }
      >
        <ErrorLine error={addons.error} />
        {!addons.data ? (
          <Loading what="add-ons" />
        ) : addons.data.length === 0 ? (
          <p class="muted">No add-on{who.app ? " linked to this app" : " yet"}.</p>
        ) : (
          <AddonList addons={addons.data} />
        )}
      </Section>
    </main>
  );
}
