/**
 * Service Dependencies (contract 4.6): Link add-ons (choose one, confirm with add), Link applications, and
 * unlinking. A link gives its variables at the app's next deploy or restart.
 */
import { useState } from "preact/hooks";
import { publishedVariableProblem } from "../core/addons.js";
import { api } from "./api.js";
import type { App } from "./types.js";
import { Action, ErrorInline, ErrorLine, Loading, Section, useData } from "./ui.js";

export function Dependencies({ app, writable, admin }: { app: App; writable: boolean; admin: boolean }) {
  const links = useData(
    () => api("GET /v1/apps/:app/links", { params: { app: app.name } }),
    [app.name],
    5000,
  );
  const addons = useData(() => api("GET /v1/addons"), [], 10_000);
  const apps = useData(() => api("GET /v1/apps"), [], 10_000);
  const [addon, setAddon] = useState("");
  const [other, setOther] = useState("");
  if (!links.data) return links.error ? <ErrorLine error={links.error} /> : <Loading what="links" />;
  const l = links.data;
  const linkable = (addons.data ?? []).filter((a) => !l.addons.some((x) => x.id === a.id));
  const linkableApps = (apps.data ?? []).filter((a) => a.id !== app.id && !l.apps.some((x) => x.id === a.id));
  const chosenAddon = addon || linkable[0]?.name || "";
  const chosenApp = other || linkableApps[0]?.name || "";
  const note = "Applies at the next deploy or restart.";
  return (
    <>
      <Section title="Link add-ons">
        {l.addons.length === 0 ? (
          <p class="muted">No add-on linked.</p>
        ) : (
          <ul class="links" data-testid="linked-addons">
            {l.addons.map((a) => (
              <li key={a.id}>
                <span>
                  <strong>{a.name}</strong> <span class="muted">{a.kind}</span>
                </span>
                {writable && (
                  <Action
                    label="Unlink"
                    busy="Unlinking…"
                    ariaLabel={`Unlink ${a.name}`}
                    run={async () => {
                      await api("DELETE /v1/apps/:app/links/addons/:addon", {
                        params: { app: app.name, addon: a.name },
                      });
                      await links.reload();
                    }}
                  />
                )}
              </li>
            ))}
          </ul>
        )}
        {writable && admin && (
          <div class="row">
            <label for="link-addon">Add-on</label>
            <select id="link-addon" value={chosenAddon} onChange={(e) => setAddon(e.currentTarget.value)}>
              {linkable.length === 0 && <option value="">no other add-on</option>}
              {linkable.map((a) => (
                <option key={a.id} value={a.name}>
                  {a.name} ({a.kind})
                </option>
              ))}
            </select>
            <Action
              label="add"
              busy="Adding…"
              kind="primary"
              disabled={chosenAddon === ""}
              done={note}
              run={async () => {
                await api("POST /v1/apps/:app/links/addons", {
                  params: { app: app.name },
                  body: { addon: chosenAddon },
                });
                setAddon("");
                await Promise.all([links.reload(), addons.reload()]);
              }}
            />
          </div>
        )}
      </Section>
      <Section title="Link applications">
        <p class="muted small">A linked application gives this app the variables it publishes.</p>
        {l.apps.length === 0 ? (
          <p class="muted">No application linked.</p>
        ) : (
          <ul class="links" data-testid="linked-apps">
            {l.apps.map((a) => (
              <li key={a.id}>
                <a href={`#/apps/${encodeURIComponent(a.name)}`}>{a.name}</a>
                {writable && (
                  <Action
                    label="Unlink"
                    busy="Unlinking…"
                    ariaLabel={`Unlink ${a.name}`}
                    run={async () => {
                      await api("DELETE /v1/apps/:app/links/apps/:target", {
                        params: { app: app.name, target: a.name },
                      });
                      await links.reload();
                    }}
                  />
                )}
              </li>
            ))}
          </ul>
        )}
        {writable && admin && (
          <div class="row">
            <label for="link-app">Application</label>
            <select id="link-app" value={chosenApp} onChange={(e) => setOther(e.currentTarget.value)}>
              {linkableApps.length === 0 && <option value="">no other application</option>}
              {linkableApps.map((a) => (
                <option key={a.id} value={a.name}>
                  {a.name}
                </option>
              ))}
            </select>
            <Action
              label="add"
              busy="Adding…"
              kind="primary"
              disabled={chosenApp === ""}
              done={note}
              run={async () => {
                await api("POST /v1/apps/:app/links/apps", {
                  params: { app: app.name },
                  body: { app: chosenApp },
                });
                setOther("");
                await links.reload();
              }}
            />
          </div>
        )}
        {writable && !admin && <p class="muted small">Linking needs an admin token; unlinking does not.</p>}
      </Section>
      <Published app={app} writable={writable} />
    </>
  );
}

/** What this app publishes to the apps linked to it (their next deploy or restart gets it). */
function Published({ app, writable }: { app: App; writable: boolean }) {
  const published = useData(
    () => api("GET /v1/apps/:app/published-config", { params: { app: app.name } }),
    [app.name],
    10_000,
  );
  const [name, setName] = useState("");
  const [value, setValue] = useState("");
  const problem = name === "" ? null : publishedVariableProblem(name, value);
  const vars = Object.entries(published.data?.vars ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return (
    <Section title="Published variables">
      <p class="muted small">What this app gives the applications linked to it (not CC_ names).</p>
      <ErrorLine error={published.error} />
      {vars.length === 0 ? (
        <p class="muted">Nothing published.</p>
      ) : (
        <ul class="links" data-testid="published">
          {vars.map(([n, v]) => (
            <li key={n}>
              <code class="wrap">
                {n}={v}
              </code>
              {writable && (
                <Action
                  label="Remove"
                  busy="Removing…"
                  ariaLabel={`Stop publishing ${n}`}
                  run={async () => {
                    await api("DELETE /v1/apps/:app/published-config/:name", {
                      params: { app: app.name, name: n },
                    });
                    await published.reload();
                  }}
                />
              )}
            </li>
          ))}
        </ul>
      )}
      {writable && (
        <div class="row">
          <input
            aria-label="Published variable name"
            placeholder="NAME"
            value={name}
            spellcheck={false}
            aria-invalid={problem !== null}
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <input
            aria-label="Published variable value"
            placeholder="value"
            value={value}
            spellcheck={false}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
          <Action
            label="Publish"
            busy="Publishing…"
            disabled={name === "" || problem !== null}
            run={async () => {
              await api("PUT /v1/apps/:app/published-config/:name", {
                params: { app: app.name, name },
                body: { value },
              });
              setName("");
              setValue("");
              await published.reload();
            }}
          />
          <ErrorInline error={problem} />
        </div>
      )}
    </Section>
  );
}
