/**
 * Domains (ADR 0018): the app's custom domains, each with its certificate's state, source, issuer, expiry and
 * last error; renew and remove; and, for an admin token only (a domain name is one namespace for every app
 * on the server: the API refuses app tokens), adding a domain and setting the user's own certificate.
 */
import { useState } from "preact/hooks";
import { api } from "./api.js";
import type { App, DomainView } from "./types.js";
import { Action, Badge, ErrorLine, Loading, Section, useData, when } from "./ui.js";

const DAY = 86_400_000;

/** "in 89 days", "expired 2 days ago". */
function expiry(notAfter: string | null): string {
  if (!notAfter) return "";
  const days = Math.round((Date.parse(notAfter) - Date.now()) / DAY);
  return days >= 0
    ? `in ${days} day${days === 1 ? "" : "s"}`
    : `expired ${-days} day${days === -1 ? "" : "s"} ago`;
}

/** A PEM text area with a file input beside it: the file's text fills the area. */
function PemInput(props: {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  placeholder: string;
}) {
  return (
    <div class="pem">
      <label for={props.id}>{props.label}</label>
      <textarea
        id={props.id}
        rows={5}
        spellcheck={false}
        autocomplete="off"
        placeholder={props.placeholder}
        value={props.value}
        onInput={(e) => props.onChange(e.currentTarget.value)}
      />
      <label class="file">
        <span>or read a file: </span>
        <input
          type="file"
          aria-label={`${props.label} file`}
          accept=".pem,.crt,.cer,.key,.txt"
          onChange={async (e) => {
            const file = e.currentTarget.files?.[0];
            if (file) props.onChange(await file.text());
          }}
        />
      </label>
    </div>
  );
}

function SetCertificate({
  app,
  domains,
  done,
}: {
  app: App;
  domains: DomainView[];
  done: () => Promise<void>;
}) {
  const [name, setName] = useState("");
  const [cert, setCert] = useState("");
  const [key, setKey] = useState("");
  const chosen = name || domains[0]?.name || "";
  return (
    <Section title="Use your own certificate">
      <p class="muted small">
        Pier checks that the chain verifies, that the key is the certificate's and that it names the domain,
        then serves it instead of obtaining one. It is not renewed by Pier: set the next one in time. A domain
        not added yet is added.
      </p>
      <div class="form">
        <label for="cert-domain">Domain</label>
        <input
          id="cert-domain"
          list="cert-domains"
          value={chosen}
          autocomplete="off"
          spellcheck={false}
          placeholder="www.example.com"
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <datalist id="cert-domains">
          {domains.map((d) => (
            <option key={d.name} value={d.name} />
          ))}
        </datalist>
        <div class="two">
          <PemInput
            id="cert-pem"
            label="Certificate (PEM)"
            value={cert}
            onChange={setCert}
            placeholder="-----BEGIN CERTIFICATE----- (then its chain)"
          />
          <PemInput
            id="key-pem"
            label="Private key (PEM)"
            value={key}
            onChange={setKey}
            placeholder="-----BEGIN PRIVATE KEY----- (unencrypted)"
          />
        </div>
      </div>
      <div class="row">
        <Action
          label="Set certificate"
          busy="Checking and installing…"
          kind="primary"
          disabled={chosen.trim() === "" || cert.trim() === "" || key.trim() === ""}
          done="Certificate set: it serves now."
          run={async () => {
            await api("PUT /v1/apps/:app/domains/:domain/certificate", {
              params: { app: app.name, domain: chosen.trim() },
              body: { cert, key },
            });
            setCert("");
            setKey("");
            await done();
          }}
        />
      </div>
    </Section>
  );
}

/** One domain's row: its certificate's state and source, issuer, expiry, last error; renew and remove. */
function DomainRow(props: { app: string; d: DomainView; writable: boolean; reload: () => Promise<void> }) {
  const { d, writable, reload } = props;
  const at = { params: { app: props.app, domain: d.name } };
  return (
    <tr>
      <td class="domain">
        <a href={d.url} target="_blank" rel="noopener noreferrer">
          {d.name}
        </a>
      </td>
      <td>
        <Badge state={d.state} /> <span class="muted small">{d.source === "user" ? "your own" : "ACME"}</span>
      </td>
      <td class="wrap">{d.issuer ?? <span class="muted">none yet</span>}</td>
      <td>
        {d.notAfter ? (
          <>
            {when(d.notAfter)} <span class="muted small">({expiry(d.notAfter)})</span>
          </>
        ) : (
          <span class="muted">no certificate</span>
        )}
      </td>
      <td class="wrap">
        {d.lastError ? (
          <span class="error">
            {d.lastError}
            {d.failures > 1 ? ` (${d.failures} failures in a row)` : ""}
          </span>
        ) : (
          <span class="muted">none</span>
        )}
        {d.nextAttemptAt && <div class="muted small">next attempt {when(d.nextAttemptAt)}</div>}
      </td>
      <td>
        {writable && (
          <div class="row tight">
            <Action
              label="Renew"
              busy="Obtaining a certificate…"
              ariaLabel={`Renew ${d.name}`}
              done="Renewed."
              run={async () => {
                try {
                  await api("POST /v1/apps/:app/domains/:domain/renew", at);
                } finally {
                  await reload();
                }
              }}
            />
            <Action
              label="Remove"
              busy="Removing…"
              kind="danger"
              ariaLabel={`Remove ${d.name}`}
              run={async () => {
                await api("DELETE /v1/apps/:app/domains/:domain", at);
                await reload();
              }}
            />
          </div>
        )}
      </td>
    </tr>
  );
}

/** Adding a domain (an admin token), or why the user cannot. */
function AddDomain(props: {
  app: string;
  canClaim: boolean;
  writable: boolean;
  reload: () => Promise<void>;
}) {
  const [adding, setAdding] = useState("");
  if (!props.canClaim)
    return props.writable ? (
      <p class="muted small" data-testid="domains-admin-only">
        Only an admin token adds a domain or sets a certificate: a domain name is shared by every app on this
        server. Ask the server's admin (<code>pier domain add NAME --app {props.app}</code>).
      </p>
    ) : null;
  return (
    <div class="row">
      <label for="add-domain">Add a domain</label>
      <input
        id="add-domain"
        value={adding}
        autocomplete="off"
        spellcheck={false}
        placeholder="www.example.com"
        onInput={(e) => setAdding(e.currentTarget.value)}
      />
      <Action
        label="Add domain"
        busy="Adding…"
        kind="primary"
        disabled={adding.trim() === ""}
        run={async () => {
          await api("POST /v1/apps/:app/domains", {
            params: { app: props.app },
            body: { name: adding.trim() },
          });
          setAdding("");
          await props.reload();
        }}
      />
    </div>
  );
}

export function Domains(props: { app: App; writable: boolean; admin: boolean }) {
  const { app, writable, admin } = props;
  const params = { app: app.name };
  const list = useData(() => api("GET /v1/apps/:app/domains", { params }), [app.name], 5000);
  const canClaim = writable && admin;
  if (app.task)
    return (
      <Section title="Domains">
        <p class="muted">A task app serves no HTTP: it has no domain.</p>
      </Section>
    );
  const domains = list.data ?? [];
  return (
    <>
      <Section title="Domains">
        <p class="muted small">
          The app answers at <code>{app.url}</code> and at each domain below, over HTTP and HTTPS. Point the
          domain's DNS at this server; Pier obtains its certificate and renews it by itself.
        </p>
        <ErrorLine error={list.error} />
        {!list.data ? (
          <Loading what="domains" />
        ) : domains.length === 0 ? (
          <p class="muted">No custom domain.</p>
        ) : (
          <div class="table-wrap">
            <table data-testid="domains">
              <thead>
                <tr>
                  <th scope="col">Domain</th>
                  <th scope="col">Certificate</th>
                  <th scope="col">Issuer</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Last error</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {domains.map((d) => (
                  <DomainRow key={d.name} app={app.name} d={d} writable={writable} reload={list.reload} />
                ))}
              </tbody>
            </table>
          </div>
        )}
        <AddDomain app={app.name} canClaim={canClaim} writable={writable} reload={list.reload} />
      </Section>
      {canClaim && list.data && <SetCertificate app={app} domains={domains} done={list.reload} />}
    </>
  );
}
