/**
 * Service Dependencies (contract 4.6): Link add-ons (choose one, confirm with add), Link applications, and
 * unlinking. A link gives its variables at the app's next deploy or restart.
 */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { publishedVariableProblem } from "../core/addons.js";
import { api } from "./api.js";
import type { App } from "./types.js";
import { Action, ErrorInline, ErrorLine, Loading, Section, useData } from "./ui.js";

const NOTE = "Applies at the next deploy or restart.";

/** A linked add-on or application: its name, and what its line shows. */
interface Linked {
  id: string;
  name: string;
  shown: ComponentChildren;
}

/** The linked add-ons or applications, each with Unlink where the user may write. */
function LinkedList(props: {
  items: Linked[];
  empty: string;
  testid: string;
  writable: boolean;
  unlink: (name: string) => Promise<void>;
}) {
  if (props.items.length === 0) return <p class="muted">{props.empty}</p>;
  return (
    <ul class="links" data-testid={props.testid}>
      {props.items.map((a) => (
        <li key={a.id}>
          {a.shown}
          {props.writable && (
            <Action
              label="Unlink"
              busy="Unlinking…"
              ariaLabel={`Unlink ${a.name}`}
              run={() => props.unlink(a.name)}
            />
          )}
        </li>
      ))}
    </ul>
  );
}

/** Choose one of `options` (the first by default) and link it with add. */
function LinkPicker(props: {
  id: string;
  label: string;
  options: { id: string; name: string; text: string }[];
  none: string;
  link: (name: string) => Promise<void>;
}) {
  const [picked, setPicked] = useState("");
  const chosen = picked || props.options[0]?.name || "";
  return (
    <div class="row">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={chosen} onChange={(e) => setPicked(e.currentTarget.value)}>
        {props.options.length === 0 && <option value="">{props.none}</option>}
        {props.options.map((o) => (
          <option key={o.id} value={o.name}>
            {o.text}
          </option>
        ))}
      </select>
      <Action
        label="add"
        busy="Adding…"
        kind="primary"
        disabled={chosen === ""}
        done={NOTE}
        run={async () => {
          await props.link(chosen);
          setPicked("");
        }}
      />
    </div>
  );
}

export function Dependencies({ app, writable, admin }: { app: App; writable: boolean; admin: boolean }) {
  const params = { app: app.name };
  const links = useData(() => api("GET /v1/apps/:app/links", { params }), [app.name], 5000);
  const addons = useData(() => api("GET /v1/addons"), [], 10_000);
  const apps = useData(() => api("GET /v1/apps"), [], 10_000);
  if (!links.data) return links.error ? <ErrorLine error={links.error} /> : <Loading what="links" />;
  const l = links.data;
  const linkable = (addons.data ?? []).filter((a) => !l.addons.some((x) => x.id === a.id));
  const linkableApps = (apps.data ?? []).filter((a) => a.id !== app.id && !l.apps.some((x) => x.id === a.id));
  return (
    <>
      <Section title="Link add-ons">
        <LinkedList
          items={l.addons.map((a) => ({
            ...a,
            shown: (
              <span>
                <strong>{a.name}</strong> <span class="muted">{a.kind}</span>
              </span>
            ),
          }))}
          empty="No add-on linked."
          testid="linked-addons"
          writable={writable}
          unlink={async (addon) => {
            await api("DELETE /v1/apps/:app/links/addons/:addon", { params: { ...params, addon } });
            await links.reload();
          }}
        />
        {writable && admin && (
          <LinkPicker
            id="link-addon"
            label="Add-on"
            options={linkable.map((a) => ({ ...a, text: `${a.name} (${a.kind})` }))}
            none="no other add-on"
            link={async (addon) => {
              await api("POST /v1/apps/:app/links/addons", { params, body: { addon } });
              await Promise.all([links.reload(), addons.reload()]);
            }}
          />
        )}
      </Section>
      <Section title="Link applications">
        <p class="muted small">A linked application gives this app the variables it publishes.</p>
        <LinkedList
          items={l.apps.map((a) => ({
            ...a,
            shown: <a href={`#/apps/${encodeURIComponent(a.name)}`}>{a.name}</a>,
          }))}
          empty="No application linked."
          testid="linked-apps"
          writable={writable}
          unlink={async (target) => {
            await api("DELETE /v1/apps/:app/links/apps/:target", { params: { ...params, target } });
            await links.reload();
          }}
        />
        {writable && admin && (
          <LinkPicker
            id="link-app"
            label="Application"
            options={linkableApps.map((a) => ({ ...a, text: a.name }))}
            none="no other application"
            link={async (target) => {
              await api("POST /v1/apps/:app/links/apps", { params, body: { app: target } });
              await links.reload();
            }}
          />
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
