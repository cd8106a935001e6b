/**
 * Environment variables (contract 1.2): name/value rows, add and remove rows, one Update Changes that applies
 * every change at once (PATCH: all or nothing). Invalid names show inline before anything is sent; secret
 * values are masked with a reveal button; the links' variables are read-only with their source; the expert
 * mode takes NAME=value lines.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { isSecretVariable, parseEnvImport } from "../core/env.js";
import { ApiError, api, appPath, describe } from "./api.js";
import { changes, masked, newKey, type Row, rowsOf, toLines } from "./env-form.js";
import type { App, EnvAnswer } from "./types.js";
import { Action, ErrorInline, ErrorLine, Loading, Section, useData } from "./ui.js";

/**
 * The variables: a token that may change the app gets them in clear (to edit them; the form masks secrets
 * until Reveal); a read-only one gets them masked by the server and cannot reveal them (ADR 0024). A page
 * drawn for a token that may write, whose tab now holds a read-only one, gets 403 on reveal: masked then.
 */
async function loadEnv(app: string, writable: boolean): Promise<EnvAnswer> {
  const path = appPath(app, "env");
  if (!writable) return api<EnvAnswer>("GET", path);
  try {
    return await api<EnvAnswer>("GET", `${path}?reveal=true`);
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) return api<EnvAnswer>("GET", path);
    throw e;
  }
}

export function Environment({ app, writable }: { app: App; writable: boolean }) {
  // Polled, so a change made elsewhere (pier env set) shows; rows the user is editing are kept.
  const env = useData(() => loadEnv(app.name, writable), [app.name, writable], 10_000);
  const [rows, setRows] = useState<Row[]>([]);
  const [expert, setExpert] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [revealLinked, setRevealLinked] = useState(false);
  /**
   * The variables the rows were made from (JSON), whether the user changed the rows since, and a reset asked
   * for (after Update Changes). New variables from the server replace rows the user has not touched only.
   */
  const shown = useRef<string | null>(null);
  const dirty = useRef(false);
  const reset = useRef(false);
  useEffect(() => {
    if (!env.data) return;
    const json = JSON.stringify(env.data.vars);
    if (json === shown.current || (shown.current !== null && dirty.current && !reset.current)) return;
    shown.current = json;
    reset.current = false;
    setRows(rowsOf(env.data.vars));
  }, [env.data]);
  if (!env.data) return env.error ? <ErrorLine error={env.error} /> : <Loading what="variables" />;
  const vars = env.data.vars;

  const parsed = expert === null ? null : parseEnvImport(expert);
  const diff =
    parsed === null
      ? changes(vars, rows)
      : changes(
          vars,
          Object.entries(parsed.vars).map(([name, value]) => ({ key: 0, name, value, revealed: false })),
        );
  const blocked = parsed ? parsed.errors.length > 0 : diff.problems.size > 0;
  dirty.current =
    expert !== null ||
    rows.some((r) => r.name === "" && r.value === "") ||
    (shown.current !== null && changes(JSON.parse(shown.current) as Record<string, string>, rows).count > 0);

  const edit = (next: Row[]) => {
    setRows(next);
    setSaved(null);
  };
  const update = (key: number, patch: Partial<Row>) =>
    edit(rows.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  const valueProps = (r: Row, i: number) => ({
    "aria-label": `Variable value ${i + 1}`,
    class: "env-value",
    placeholder: "value",
    value: r.value,
    spellcheck: false,
    autocomplete: "off",
    readOnly: !writable,
    onInput: (e: Event) => update(r.key, { value: (e.currentTarget as HTMLInputElement).value }),
  });
  const apply = async () => {
    setBusy(true);
    setError(null);
    setSaved(null);
    try {
      await api("PATCH", appPath(app.name, "env"), { set: diff.set, unset: diff.unset });
      reset.current = true;
      await env.reload();
      setExpert(null);
      setSaved(
        `Saved ${diff.count} change${diff.count === 1 ? "" : "s"}: they apply at the next deploy or restart.`,
      );
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <Section
        title="Environment variables"
        actions={
          writable && (
            <button
              type="button"
              class="plain small"
              aria-pressed={expert !== null}
              onClick={() => {
                if (expert === null) setExpert(toLines(rows));
                else if (parsed && parsed.errors.length === 0) {
                  setRows(rowsOf(parsed.vars));
                  setExpert(null);
                } else setExpert(null);
              }}
            >
              {expert === null ? "Expert mode" : "Back to the form"}
            </button>
          )
        }
      >
        {expert !== null ? (
          <div class="expert">
            <label for="env-expert">One NAME=value per line (# comments, "quoted values" allowed)</label>
            <textarea
              id="env-expert"
              rows={Math.max(8, expert.split("\n").length + 2)}
              spellcheck={false}
              value={expert}
              onInput={(e) => {
                setExpert(e.currentTarget.value);
                setSaved(null);
              }}
            />
            {parsed?.errors.map((p) => (
              <p class="error" key={p}>
                {p}
              </p>
            ))}
          </div>
        ) : (
          <div class="env-rows" data-testid="env-rows">
            {rows.length === 0 && <p class="muted">No variable set.</p>}
            {!writable && rows.length > 0 && (
              <p class="muted small" data-testid="secrets-masked">
                Secret values are masked: this token is read-only, so it cannot reveal them.
              </p>
            )}
            {rows.map((r, i) => {
              const secret = isSecretVariable(r.name) && r.value !== "";
              const problem = diff.problems.get(r.key);
              return (
                <div class="env-row" key={r.key}>
                  <input
                    aria-label={`Variable name ${i + 1}`}
                    class="env-name"
                    placeholder="NAME"
                    value={r.name}
                    spellcheck={false}
                    autocomplete="off"
                    readOnly={!writable}
                    aria-invalid={problem !== undefined}
                    onInput={(e) => update(r.key, { name: e.currentTarget.value })}
                  />
                  {secret && !r.revealed ? (
                    <input type="password" {...valueProps(r, i)} />
                  ) : (
                    <input type="text" {...valueProps(r, i)} />
                  )}
                  {secret && writable && (
                    <button
                      type="button"
                      class="plain small"
                      aria-pressed={r.revealed}
                      aria-label={`${r.revealed ? "Hide" : "Reveal"} ${r.name}`}
                      onClick={() => update(r.key, { revealed: !r.revealed })}
                    >
                      {r.revealed ? "Hide" : "Reveal"}
                    </button>
                  )}
                  {writable && (
                    <button
                      type="button"
                      class="plain small"
                      aria-label={`Remove ${r.name || `row ${i + 1}`}`}
                      onClick={() => edit(rows.filter((x) => x.key !== r.key))}
                    >
                      Remove
                    </button>
                  )}
                  {problem && (
                    <p class="error row-problem" role="alert">
                      {problem}
                    </p>
                  )}
                </div>
              );
            })}
            {writable && (
              <button
                type="button"
                class="plain"
                onClick={() => edit([...rows, { key: newKey(), name: "", value: "", revealed: false }])}
              >
                Add a variable
              </button>
            )}
          </div>
        )}
        {writable && (
          <div class="row sticky-actions">
            <button
              type="button"
              class="primary"
              onClick={apply}
              disabled={busy || blocked || diff.count === 0}
              aria-busy={busy}
            >
              {busy ? "Updating…" : "Update Changes"}
            </button>
            <span class="muted small">
              {diff.count === 0 ? "No change" : `${diff.count} change${diff.count === 1 ? "" : "s"} to apply`}
            </span>
            <ErrorInline error={error} />
            {saved && (
              <span class="ok" role="status">
                {saved}
              </span>
            )}
            {saved && (
              <Action
                label="Restart now"
                busy="Restarting…"
                done="Restart queued: see Deployments."
                run={() => api("POST", appPath(app.name, "deployments"), {})}
              />
            )}
          </div>
        )}
      </Section>
      {env.data.linked && env.data.linked.length > 0 && (
        <Section
          title="From links (read-only)"
          actions={
            writable && (
              <button
                type="button"
                class="plain small"
                aria-pressed={revealLinked}
                onClick={() => setRevealLinked(!revealLinked)}
              >
                {revealLinked ? "Hide secrets" : "Reveal secrets"}
              </button>
            )
          }
        >
          <div class="table-wrap">
            <table data-testid="linked-vars">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Value</th>
                  <th scope="col">Source</th>
                </tr>
              </thead>
              <tbody>
                {env.data.linked.map((l) => (
                  <tr key={`${l.source.kind}:${l.source.name}:${l.name}`}>
                    <td>
                      <code>{l.name}</code>
                    </td>
                    <td class="wrap">
                      <code>{revealLinked ? l.value : masked(l.name, l.value)}</code>
                    </td>
                    <td class="nowrap">{`${l.source.kind === "addon" ? "add-on" : "app"} ${l.source.name}`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Section>
      )}
    </>
  );
}
