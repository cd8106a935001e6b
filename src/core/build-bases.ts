import { dockerInstructions, splitWords } from "./dockerfile.js";

/**
 * Which images a tenant's Dockerfile may build on (ADR 0024). Every app's release image lives in the one
 * engine's image namespace (`pier-app/<app id>:<deployment id>`), so a Dockerfile naming another app's image
 * (`FROM`, `COPY --from=`, `RUN --mount=from=`, a BuildKit `# syntax=` frontend) would read that app's code.
 * So no Dockerfile may name a `pier-app/*` image, nor a `pier/*` image other than the public base images,
 * nor an image by its id (the engine resolves a bare hex name, or a prefix of one, to any local image).
 * Pure: the references are read from the text, ARGs substituted as the builder does.
 */

/** The `pier/*` images a Dockerfile may build on: the base images the set-up builds for users (README). */
export const PUBLIC_BASE_IMAGES = ["pier/base", "pier/node", "pier/php", "pier/php-os"] as const;

export interface ImageReference {
  /** As written in the Dockerfile. */
  written: string;
  /** After ARG substitution: what the builder resolves. */
  ref: string;
  /** 1-based line of the instruction (0: the `# syntax=` directive). */
  line: number;
  /** `FROM`, `COPY --from`, `RUN --mount from`, `# syntax`. */
  where: string;
}

/** The repository of a reference, lowercased, without the tag or digest, and with Docker Hub's host dropped. */
function repository(ref: string): string {
  let name = ref.toLowerCase().split("@")[0] ?? "";
  const slash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  if (colon > slash) name = name.slice(0, colon);
  for (const hub of ["docker.io/", "index.docker.io/", "registry-1.docker.io/"]) {
    if (name.startsWith(hub)) name = name.slice(hub.length);
  }
  return name.startsWith("library/") ? name.slice("library/".length) : name;
}

/** Why a Dockerfile may not name `ref` (after substitution), or null. */
export function imageRuleProblem(ref: string): string | null {
  const repo = repository(ref);
  if (/^(sha256:)?[0-9a-f]+$/i.test(ref.trim()))
    return "an image named by its id (or a bare hex name, which the engine resolves as one) could be another app's image: name the image by repository and tag";
  if (repo.startsWith("pier-app/") || repo === "pier-app")
    return "pier-app/* images are apps' releases, private to each app: build FROM a base image instead";
  if (
    (repo.startsWith("pier/") || repo === "pier") &&
    !(PUBLIC_BASE_IMAGES as readonly string[]).includes(repo)
  )
    return `${repo} is one of Pier's own images, not a base for builds (those are ${PUBLIC_BASE_IMAGES.join(", ")})`;
  return null;
}

type Vars = ReadonlyMap<string, string>;

/** `${NAME...}` forms of the Dockerfile reference; anything else cannot be checked. */
function expandBraced(body: string, vars: Vars): string | null {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])(.*))?$/s.exec(body);
  if (!m) return null;
  const value = vars.get(m[1] as string);
  const op = m[2];
  const word = m[3] ?? "";
  if (op === undefined) return value ?? "";
  const set = op.startsWith(":") ? value !== undefined && value !== "" : value !== undefined;
  if (op.endsWith("-")) return set ? (value ?? "") : expandWord(word, vars);
  return set ? expandWord(word, vars) : "";
}

/** A word of FROM or a flag's value as the builder reads it: quotes removed, escapes and `$` substituted. */
export function expandWord(word: string, vars: Vars): string | null {
  let out = "";
  let quote: string | null = null;
  for (let i = 0; i < word.length; i++) {
    const c = word[i] as string;
    if (c === "\\" && quote !== "'" && i + 1 < word.length) {
      out += word[++i];
    } else if (quote !== null && c === quote) {
      quote = null;
    } else if (quote === null && (c === '"' || c === "'")) {
      quote = c;
    } else if (c === "$" && quote !== "'") {
      const rest = word.slice(i + 1);
      const braced = /^\{([^}]*)\}/.exec(rest);
      const plain = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
      if (braced) {
        const v = expandBraced(braced[1] as string, vars);
        if (v === null) return null;
        out += v;
        i += (braced[0] as string).length;
      } else if (plain) {
        out += vars.get(plain[0]) ?? "";
        i += plain[0].length;
      } else out += c;
    } else out += c;
  }
  return out;
}

/** Stands for a value Pier could not substitute: a reference containing it is unreadable. */
const UNKNOWN = "\u0000";

/** `NAME=value` (the value substituted with the ARGs before it) or `NAME` of an ARG instruction. */
function argDeclarations(args: string, vars: Vars): [string, string | undefined][] {
  return splitWords(args).map((w) => {
    const at = w.indexOf("=");
    if (at < 0) return [w, undefined];
    return [w.slice(0, at), expandWord(w.slice(at + 1), vars) ?? UNKNOWN];
  });
}

/** The images an instruction names besides its FROM: `COPY --from=`, `RUN --mount=...,from=`. */
function flagImages(name: string, args: string): { word: string; where: string }[] {
  const out: { word: string; where: string }[] = [];
  for (const w of splitWords(args)) {
    if (!w.startsWith("--")) break;
    const from = /^--from=(.*)$/is.exec(w);
    if (from && (name === "COPY" || name === "ADD"))
      out.push({ word: from[1] as string, where: `${name} --from` });
    const mount = /^--mount=(.*)$/is.exec(w);
    if (mount && name === "RUN") {
      for (const part of (mount[1] as string).split(",")) {
        const kv = /^from=(.*)$/is.exec(part.trim());
        if (kv) out.push({ word: kv[1] as string, where: "RUN --mount from" });
      }
    }
  }
  return out;
}

/** The frontend image of a BuildKit `# syntax=` directive, if any. */
function syntaxDirective(text: string): string | null {
  for (const line of text.replace(/^\uFEFF/, "").split(/\r?\n/)) {
    const m = /^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.*?)\s*$/.exec(line.trim());
    if (!m) return null;
    if ((m[1] as string).toLowerCase() === "syntax") return m[2] as string;
  }
  return null;
}

/**
 * Every image the Dockerfile names, with ARGs substituted (build args over the Dockerfile's defaults; FROM
 * sees the ARGs declared before the first FROM, other instructions their stage's), earlier stages' names
 * left out. `unreadable` lists references whose substitution Pier cannot follow.
 */
export function dockerfileImages(
  text: string,
  buildArgs: Readonly<Record<string, string>>,
): { images: ImageReference[]; unreadable: ImageReference[] } {
  const images: ImageReference[] = [];
  const unreadable: ImageReference[] = [];
  const stages = new Set<string>();
  const globals = new Map<string, string>();
  let scope: Map<string, string> | null = null;
  const add = (written: string, vars: Vars, line: number, where: string) => {
    const ref = expandWord(written, vars);
    // COPY --from=<n> names the n-th stage; FROM <n> would name an image (by id, for the engine).
    const stageIndex = where !== "FROM" && ref !== null && /^\d+$/.test(ref);
    if (ref === null || ref.includes(UNKNOWN)) unreadable.push({ written, ref: written, line, where });
    else if (!stages.has(ref.toLowerCase()) && !stageIndex && ref.toLowerCase() !== "scratch")
      images.push({ written, ref, line, where });
  };
  const syntax = syntaxDirective(text);
  if (syntax) add(syntax, new Map(), 0, "# syntax");
  for (const ins of dockerInstructions(text).instructions) {
    if (ins.name === "ARG") {
      for (const [name, dflt] of argDeclarations(ins.args, scope ?? globals)) {
        const value = Object.hasOwn(buildArgs, name) ? buildArgs[name] : (dflt ?? globals.get(name));
        if (value !== undefined) (scope ?? globals).set(name, value);
      }
    } else if (ins.name === "FROM") {
      const words = splitWords(ins.args).filter((w) => !w.startsWith("--"));
      if (words[0] !== undefined) add(words[0], globals, ins.line, "FROM");
      if (words[1]?.toLowerCase() === "as" && words[2]) stages.add(words[2].toLowerCase());
      scope = new Map();
    } else {
      for (const f of flagImages(ins.name, ins.args)) add(f.word, scope ?? globals, ins.line, f.where);
    }
  }
  return { images, unreadable };
}

/** The refusals of a Dockerfile's images, one message each (empty: every image is allowed). */
export function dockerfileImageProblems(
  path: string,
  text: string,
  buildArgs: Readonly<Record<string, string>>,
): string[] {
  const { images, unreadable } = dockerfileImages(text, buildArgs);
  const at = (r: ImageReference) =>
    r.line === 0 ? `${path}'s # syntax directive` : `${path} line ${r.line}`;
  const problems = unreadable.map(
    (r) =>
      `${at(r)}: ${r.where} ${r.written}: Pier cannot tell which image this substitution names, so it cannot check that it is not another app's image; write the image name, or use $NAME, \${NAME}, \${NAME:-default} or \${NAME:+value}.`,
  );
  for (const r of images) {
    const why = imageRuleProblem(r.ref);
    const named = r.written === r.ref ? r.ref : `${r.written} (= ${r.ref})`;
    if (why) problems.push(`${at(r)}: ${r.where} ${named} is refused: ${why}.`);
  }
  return problems;
}
