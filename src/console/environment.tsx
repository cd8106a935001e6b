/**
 * Environment variables (contract 1.2): name/value rows, add and remove rows, one Update Changes that applies
 * every change at once (PATCH: all or nothing). Invalid names show inline before anything is sent; secret
 * values are masked with a reveal button; the links' variables are read-only with their source; the expert
 * mode takes NAME=value lines.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { parseEnvImport } from "../core/env-import.js";
import { ApiError, api, describe } from "./api.js";
import { type Changes, changes, type Row, rowsOf, toLines } from "./env-form.js";
import { ApplyBar, EnvRows, ExpertEditor, LinkedVariables } from "./env-rows.js";
import type { App, EnvAnswer } from "./types.js";
import { ErrorLine, Loading, Section, useData } from "./ui.js";

/**
 * The variables: a token that may change the app gets them in clear (to edit them; the form masks secrets
 * until Reveal); a read-only one gets them masked by the server and cannot reveal them (ADR 0024). A page
 * drawn for a token that may write, whose tab now holds a read-only one, gets 403 on reveal: masked then.
 */
async function loadEnv(app: string, writable: boolean): Promise<EnvAnswer> {
  const params = { app };
  if (!writable) return api("GET /v1/apps/:app/env", { params });
  try {
    return await api("GET /v1/apps/:app/env", { params, query: { reveal: true } });
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) return api("GET /v1/apps/:app/env", { params });
    throw e;
  }
}

/**
 * The rows the form shows, made from the server's variables; new variables from the server replace rows the
 * user has not touched only. `markDirty` says each render whether the user changed them; `resetNext` asks
 * that the next variables replace the rows whatever (after Update Changes).
 */
function useRows(vars: Record<string, string> | undefined) {
  const [rows, setRows] = useState<Row[]>([]);
  /** The variables the rows were made from (JSON), whether the user changed the rows since, a reset asked. */
  const shown = useRef<string | null>(null);
  const dirty = useRef(false);
  const reset = useRef(false);
  useEffect(() => {
    if (!vars) return;
    const json = JSON.stringify(vars);
    if (json === shown.current || (shown.current !== null && dirty.current && !reset.current)) return;
    shown.current = json;
    reset.current = false;
    setRows(rowsOf(vars));
  }, [vars]);
  const markDirty = (expert: string | null) => {
    dirty.current =
      expert !== null ||
      rows.some((r) => r.name === "" && r.value === "") ||
      (shown.current !== null &&
        changes(JSON.parse(shown.current) as Record<string, string>, rows).count > 0);
  };
  const resetNext = () => {
    reset.current = true;
  };
  return { rows, setRows, markDirty, resetNext };
}

/** What Update Changes would send: from the rows, or from the expert mode's text when it is on. */
function pending(vars: Record<string, string>, rows: readonly Row[], expert: string | null) {
  const parsed = expert === null ? null : parseEnvImport(expert);
  const diff =
    parsed === null
      ? changes(vars, rows)
      : changes(
          vars,
          Object.entries(parsed.vars).map(([name, value]) => ({ key: 0, name, value, revealed: false })),
        );
  const blocked = parsed ? parsed.errors.length > 0 : diff.problems.size > 0;
  return { parsed, diff, blocked };
}

/** Update Changes: one PATCH with every change (all or nothing), then `after`; what it said. */
function useSave(app: string, after: () => Promise<void>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const save = async (diff: Changes) => {
    setBusy(true);
    setError(null);
    setSaved(null);
    try {
      await api("PATCH /v1/apps/:app/env", { params: { app }, body: { set: diff.set, unset: diff.unset } });
      await after();
      setSaved(
        `Saved ${diff.count} change${diff.count === 1 ? "" : "s"}: they apply at the next deploy or restart.`,
      );
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, saved, setSaved, save };
}

export function Environment({ app, writable }: { app: App; writable: boolean }) {
  // Polled, so a change made elsewhere (pier env set) shows; rows the user is editing are kept.
  const env = useData(() => loadEnv(app.name, writable), [app.name, writable], 10_000);
  const form = useRows(env.data?.vars);
  const [expert, setExpert] = useState<string | null>(null);
  const [revealLinked, setRevealLinked] = useState(false);
  const saving = useSave(app.name, async () => {
    form.resetNext();
    await env.reload();
    setExpert(null);
  });
  if (!env.data) return env.error ? <ErrorLine error={env.error} /> : <Loading what="variables" />;
  const { rows } = form;
  const { parsed, diff, blocked } = pending(env.data.vars, rows, expert);
  form.markDirty(expert);

  const edit = (next: Row[]) => {
    form.setRows(next);
    saving.setSaved(null);
  };
  const update = (key: number, patch: Partial<Row>) =>
    edit(rows.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  const toggleExpert = () => {
    if (expert === null) setExpert(toLines(rows));
    else if (parsed && parsed.errors.length === 0) {
      form.setRows(rowsOf(parsed.vars));
      setExpert(null);
    } else setExpert(null);
  };

  return (
    <>
      <Section
        title="Environment variables"
        actions={
          writable && (
            <button type="button" class="plain small" aria-pressed={expert !== null} onClick={toggleExpert}>
              {expert === null ? "Expert mode" : "Back to the form"}
            </button>
          )
        }
      >
        {expert !== null ? (
          <ExpertEditor
            text={expert}
            errors={parsed?.errors}
            onInput={(text) => {
              setExpert(text);
              saving.setSaved(null);
            }}
          />
        ) : (
          <EnvRows rows={rows} writable={writable} problems={diff.problems} update={update} edit={edit} />
        )}
        {writable && (
          <ApplyBar
            app={app.name}
            count={diff.count}
            busy={saving.busy}
            blocked={blocked}
            error={saving.error}
            saved={saving.saved}
            apply={() => saving.save(diff)}
          />
        )}
      </Section>
      {env.data.linked && env.data.linked.length > 0 && (
        <LinkedVariables
          linked={env.data.linked}
          writable={writable}
          reveal={revealLinked}
          setReveal={setRevealLinked}
        />
      )}
    </>
  );
}
