/**
 * The parts of the Environment page (environment.tsx): the form's rows, the expert mode's text, the bar that
 * applies the changes, and the links' read-only variables. State stays in Environment; these only draw it.
 */
import { isSecretVariable } from "../core/env-secrets.js";
import { api } from "./api.js";
import { type Changes, masked, newKey, type Row } from "./env-form.js";
import type { EnvAnswer } from "./types.js";
import { Action, ErrorInline, Section } from "./ui.js";

/** One variable's row: name, value (masked for a secret until Reveal), Reveal/Hide, Remove, its problem. */
function EnvRow(props: {
  r: Row;
  i: number;
  writable: boolean;
  problem: string | undefined;
  update: (key: number, patch: Partial<Row>) => void;
  remove: (key: number) => void;
}) {
  const { r, i, writable, problem, update } = props;
  const secret = isSecretVariable(r.name) && r.value !== "";
  const valueProps = {
    "aria-label": `Variable value ${i + 1}`,
    class: "env-value",
    placeholder: "value",
    value: r.value,
    spellcheck: false,
    autocomplete: "off",
    readOnly: !writable,
    onInput: (e: Event) => update(r.key, { value: (e.currentTarget as HTMLInputElement).value }),
  };
  return (
    <div class="env-row">
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
        <input type="password" {...valueProps} />
      ) : (
        <input type="text" {...valueProps} />
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
          onClick={() => props.remove(r.key)}
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
}

/** The form: a row per variable, and Add a variable. */
export function EnvRows(props: {
  rows: Row[];
  writable: boolean;
  problems: Changes["problems"];
  update: (key: number, patch: Partial<Row>) => void;
  edit: (next: Row[]) => void;
}) {
  const { rows, writable, edit } = props;
  return (
    <div class="env-rows" data-testid="env-rows">
      {rows.length === 0 && <p class="muted">No variable set.</p>}
      {!writable && rows.length > 0 && (
        <p class="muted small" data-testid="secrets-masked">
          Secret values are masked: this token is read-only, so it cannot reveal them.
        </p>
      )}
      {rows.map((r, i) => (
        <EnvRow
          key={r.key}
          r={r}
          i={i}
          writable={writable}
          problem={props.problems.get(r.key)}
          update={props.update}
          remove={(key) => edit(rows.filter((x) => x.key !== key))}
        />
      ))}
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
  );
}

/** The expert mode: NAME=value lines, and what is wrong with them. */
export function ExpertEditor(props: {
  text: string;
  errors: string[] | undefined;
  onInput: (text: string) => void;
}) {
  return (
    <div class="expert">
      <label for="env-expert">One NAME=value per line (# comments, "quoted values" allowed)</label>
      <textarea
        id="env-expert"
        rows={Math.max(8, props.text.split("\n").length + 2)}
        spellcheck={false}
        value={props.text}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
      {props.errors?.map((p) => (
        <p class="error" key={p}>
          {p}
        </p>
      ))}
    </div>
  );
}

/** Update Changes, the count of changes, the outcome, and Restart now once saved. */
export function ApplyBar(props: {
  app: string;
  count: number;
  busy: boolean;
  blocked: boolean;
  error: string | null;
  saved: string | null;
  apply: () => void;
}) {
  const { count, busy, saved } = props;
  return (
    <div class="row sticky-actions">
      <button
        type="button"
        class="primary"
        onClick={props.apply}
        disabled={busy || props.blocked || count === 0}
        aria-busy={busy}
      >
        {busy ? "Updating…" : "Update Changes"}
      </button>
      <span class="muted small">
        {count === 0 ? "No change" : `${count} change${count === 1 ? "" : "s"} to apply`}
      </span>
      <ErrorInline error={props.error} />
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
          run={() => api("POST /v1/apps/:app/deployments", { params: { app: props.app }, body: {} })}
        />
      )}
    </div>
  );
}

/** The links' variables, read-only with their source; secrets masked unless revealed. */
export function LinkedVariables(props: {
  linked: NonNullable<EnvAnswer["linked"]>;
  writable: boolean;
  reveal: boolean;
  setReveal: (reveal: boolean) => void;
}) {
  const { reveal } = props;
  return (
    <Section
      title="From links (read-only)"
      actions={
        props.writable && (
          <button
            type="button"
            class="plain small"
            aria-pressed={reveal}
            onClick={() => props.setReveal(!reveal)}
          >
            {reveal ? "Hide secrets" : "Reveal secrets"}
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
            {props.linked.map((l) => (
              <tr key={`${l.source.kind}:${l.source.name}:${l.name}`}>
                <td>
                  <code>{l.name}</code>
                </td>
                <td class="wrap">
                  <code>{reveal ? l.value : masked(l.name, l.value)}</code>
                </td>
                <td class="nowrap">{`${l.source.kind === "addon" ? "add-on" : "app"} ${l.source.name}`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Section>
  );
}
