/** Shared pieces of the console: data loading with polling, buttons that show progress and errors. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { describe } from "./api.js";
import { FLAVORS, type Flavor, type Runtime } from "./types.js";

export interface Loaded<T> {
  data: T | undefined;
  error: string | null;
  reload: () => Promise<void>;
}

/**
 * Loads `load()` now, again when `deps` change, and every `pollMs` while the page shows it (so a change made
 * elsewhere, by the CLI or a deploy, shows without a reload). The last good data stays while a poll fails.
 */
export function useData<T>(load: () => Promise<T>, deps: unknown[], pollMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const loadRef = useRef(load);
  loadRef.current = load;
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const g = generation.current;
    try {
      const d = await loadRef.current();
      if (g !== generation.current) return;
      setData(d);
      setError(null);
    } catch (e) {
      if (g === generation.current) setError(describe(e));
    }
  }, []);
  useEffect(() => {
    generation.current++;
    setData(undefined);
    void reload();
    if (!pollMs) return;
    const t = setInterval(() => {
      if (!document.hidden) void reload();
    }, pollMs);
    return () => {
      clearInterval(t);
      generation.current++;
    };
  }, deps);
  return { data, error, reload };
}

/** A button that runs `run`, shows its progress (disabled, `busy` label) and its error beside it. */
export function Action(props: {
  label: string;
  busy?: string;
  run: () => Promise<unknown>;
  kind?: "primary" | "danger" | "plain";
  disabled?: boolean;
  title?: string;
  /** The button's accessible name, when its label alone is ambiguous ("Unlink" beside each link). */
  ariaLabel?: string;
  done?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const mounted = useRef(true);
  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );
  const click = async () => {
    setBusy(true);
    setError(null);
    setDone(false);
    try {
      await props.run();
      if (mounted.current) setDone(true);
    } catch (e) {
      if (mounted.current) setError(describe(e));
    } finally {
      if (mounted.current) setBusy(false);
    }
  };
  return (
    <span class="action">
      <button
        type="button"
        class={props.kind ?? "plain"}
        disabled={busy || props.disabled}
        aria-busy={busy}
        title={props.title}
        aria-label={props.ariaLabel}
        onClick={click}
      >
        {busy ? (props.busy ?? `${props.label}…`) : props.label}
      </button>
      <ErrorInline error={error} />
      {done && props.done && !error && (
        <span class="ok" role="status">
          {props.done}
        </span>
      )}
    </span>
  );
}

/** A form's error beside its buttons (a line of its own: ErrorLine). */
export function ErrorInline({ error }: { error: string | null | undefined }) {
  return error ? (
    <span class="error" role="alert">
      {error}
    </span>
  ) : null;
}

export function ErrorLine({ error }: { error: string | null | undefined }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-busy="true">
      Loading {what}…
    </p>
  );
}

/** A state as a coloured badge: green when fine, red when failed, amber while under way. */
export function Badge({ state }: { state: string }) {
  const tone = ["running", "succeeded", "active", "issued"].includes(state)
    ? "good"
    : ["failed", "down", "crashed", "exited", "dead"].includes(state)
      ? "bad"
      : ["queued", "building", "deploying", "restarting", "created", "pending"].includes(state)
        ? "busy"
        : "idle";
  return <span class={`badge ${tone}`}>{state}</span>;
}

/** Copies `text` and says so. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied("Copied");
    } catch {
      setCopied("Copy failed: select the text");
    }
    setTimeout(() => setCopied(null), 2000);
  };
  return (
    <span class="action">
      <button type="button" class="plain small" onClick={copy} aria-label={label}>
        Copy
      </button>
      {copied && (
        <span class="ok" role="status">
          {copied}
        </span>
      )}
    </span>
  );
}

export function Section(props: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card">
      <div class="card-head">
        <h2>{props.title}</h2>
        {props.actions && <div class="card-actions">{props.actions}</div>}
      </div>
      {props.children}
    </section>
  );
}

/** A time as the user's locale writes it. */
export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : "");

/** How long from `from` to `to` (or now): `42 s`, `3 min 5 s`. */
export function duration(from: string | null, to: string | null): string {
  if (!from) return "";
  const s = Math.max(0, Math.round(((to ? Date.parse(to) : Date.now()) - Date.parse(from)) / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** The option of `options` a `<select>` chose (its value is a string), or undefined. */
export const chosen = <T extends string>(options: readonly T[], value: string): T | undefined =>
  options.find((o) => o === value);

/**
 * A flavor's select: those the runtime takes (a PHP app has no pico), with a first "default (…)" option
 * (the value "") when `defaultLabel` is given.
 */
export function FlavorSelect<V extends Flavor | "">(props: {
  id: string;
  value: V;
  onChange: (value: Flavor | "") => void;
  runtime?: Runtime;
  defaultLabel?: string;
}) {
  const flavors = FLAVORS.filter((f) => props.runtime !== "phpserver" || f !== "pico");
  return (
    <select
      id={props.id}
      value={props.value}
      onChange={(e) => props.onChange(chosen(FLAVORS, e.currentTarget.value) ?? "")}
    >
      {props.defaultLabel !== undefined && <option value="">default ({props.defaultLabel})</option>}
      {flavors.map((f) => (
        <option key={f} value={f}>
          {f}
        </option>
      ))}
    </select>
  );
}

/** A name's input, its problem (from the rule the API applies) or `help` under it. */
export function NameInput(props: {
  id: string;
  value: string;
  onInput: (name: string) => void;
  problem: string | null;
  help: string;
}) {
  return (
    <>
      <label for={props.id}>Name</label>
      <input
        id={props.id}
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value.trim())}
        autocomplete="off"
        spellcheck={false}
        aria-invalid={props.problem !== null}
        aria-describedby={`${props.id}-help`}
        required
      />
      <p id={`${props.id}-help`} class={props.problem ? "error" : "muted small"}>
        {props.problem ?? props.help}
      </p>
    </>
  );
}
