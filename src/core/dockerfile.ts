/**
 * Reads what Pier needs from a Dockerfile: its instructions, stages, ARGs, EXPOSEd ports and whether the
 * image gets a CMD or an ENTRYPOINT. It follows the Dockerfile reference's lexical rules (parser directives,
 * escape character, line continuations, comments, heredocs) but validates nothing: the builder does.
 */

export interface DockerInstruction {
  /** Upper-cased: `RUN`, `FROM`... */
  name: string;
  /** Everything after the name, continuations joined, trimmed. Heredoc bodies are not included. */
  args: string;
  /** 1-based line where the instruction starts. */
  line: number;
}

export interface DockerStage {
  /** The base: an image reference, or the name of an earlier stage. */
  from: string;
  alias?: string;
}

export interface DockerfileAnalysis {
  instructions: DockerInstruction[];
  /**
   * The final image gets a CMD / an ENTRYPOINT: set in the final stage, or in the earlier stages it is
   * built `FROM` (an ENTRYPOINT resets the CMD inherited from its base, as the builder does).
   */
  hasCmd: boolean;
  hasEntrypoint: boolean;
  /** Every ARG declared, global or in a stage, in order of first declaration. */
  argNames: string[];
  stages: DockerStage[];
  /** TCP ports EXPOSEd by the final image (same stage chain as CMD), ranges expanded, in order, no repeats. */
  exposed: number[];
  /** Some RUN/COPY/ADD uses a heredoc (`<<EOF`), which only BuildKit understands. */
  usesHeredoc: boolean;
}

const HEREDOC_INSTRUCTIONS = new Set(["RUN", "COPY", "ADD"]);
const KNOWN_DIRECTIVES = new Set(["syntax", "escape", "check"]);
const DIRECTIVE_RE = /^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.*?)\s*$/;
const HEREDOC_RE = /^\d*<<(-?)(["']?)([^<"'\s]+)\2$/;

interface Heredoc {
  delimiter: string;
  stripTabs: boolean;
}

/** Splits on whitespace outside quotes; quotes and escapes are kept in the words. */
export function splitWords(s: string, esc = "\\"): string[] {
  const words: string[] = [];
  let cur = "";
  let quote: string | null = null;
  let inWord = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === esc && i + 1 < s.length && quote !== "'") {
      cur += c + s[i + 1];
      i++;
      inWord = true;
    } else if (quote) {
      cur += c;
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur += c;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = "";
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

function heredocsOf(args: string, esc: string): Heredoc[] {
  const out: Heredoc[] = [];
  for (const w of splitWords(args, esc)) {
    const m = HEREDOC_RE.exec(w);
    if (m) out.push({ stripTabs: m[1] === "-", delimiter: m[3] as string });
  }
  return out;
}

/** Reads the parser directives at the top of the file; returns the escape character. */
function escapeCharacter(lines: readonly string[]): string {
  let esc = "\\";
  for (const line of lines) {
    const m = DIRECTIVE_RE.exec(line.trim());
    const key = m?.[1]?.toLowerCase();
    // A blank line, an instruction, a comment or an unknown directive (a comment too) ends the directives.
    if (!m || key === undefined || !KNOWN_DIRECTIVES.has(key)) break;
    if (key === "escape" && (m[2] === "`" || m[2] === "\\")) esc = m[2];
  }
  return esc;
}

function isComment(line: string): boolean {
  return line.trimStart().startsWith("#");
}

/** The instructions of a Dockerfile, continuations joined and heredoc bodies skipped. */
export function dockerInstructions(text: string): {
  instructions: DockerInstruction[];
  usesHeredoc: boolean;
} {
  const lines = (text.startsWith("\uFEFF") ? text.slice(1) : text).split(/\r?\n/);
  const esc = escapeCharacter(lines);
  const continues = (s: string) => {
    const t = s.replace(/[ \t]+$/, "");
    return t.endsWith(esc) ? t.slice(0, -1) : null;
  };
  const instructions: DockerInstruction[] = [];
  let usesHeredoc = false;
  let i = 0;
  while (i < lines.length) {
    const start = i;
    const first = lines[i] as string;
    i++;
    if (first.trim() === "" || isComment(first)) continue;
    let logical = first;
    let head = continues(logical);
    while (head !== null) {
      logical = head;
      // Inside a continuation, comment lines and blank lines are skipped.
      while (i < lines.length && (isComment(lines[i] as string) || (lines[i] as string).trim() === "")) i++;
      if (i >= lines.length) break;
      const next = lines[i] as string;
      i++;
      logical += next;
      head = continues(logical);
    }
    const m = /^\s*(\S+)\s*([\s\S]*)$/.exec(logical);
    if (!m) continue;
    const name = (m[1] as string).toUpperCase();
    const args = (m[2] as string).trim();
    instructions.push({ name, args, line: start + 1 });
    if (HEREDOC_INSTRUCTIONS.has(name)) {
      for (const doc of heredocsOf(args, esc)) {
        usesHeredoc = true;
        while (i < lines.length) {
          const body = lines[i] as string;
          i++;
          if ((doc.stripTabs ? body.replace(/^\t+/, "") : body) === doc.delimiter) break;
        }
      }
    }
  }
  return { instructions, usesHeredoc };
}

function unquote(s: string): string {
  return s.length >= 2 && (s[0] === '"' || s[0] === "'") && s.endsWith(s[0]) ? s.slice(1, -1) : s;
}

function fromStage(args: string): DockerStage {
  const words = splitWords(args).filter((w) => !w.startsWith("--"));
  const from = words[0] ?? "";
  const as = words[1];
  const alias = as !== undefined && as.toLowerCase() === "as" ? words[2] : undefined;
  return alias === undefined ? { from } : { from, alias };
}

function exposedPorts(args: string): number[] {
  const out: number[] = [];
  for (const w of splitWords(args)) {
    const m = /^(\d{1,5})(?:-(\d{1,5}))?(?:\/(tcp|udp|sctp))?$/i.exec(unquote(w));
    if (!m || (m[3] !== undefined && m[3].toLowerCase() !== "tcp")) continue;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    for (let p = lo; p <= hi && p <= 65535; p++) if (p >= 1) out.push(p);
  }
  return out;
}

export function analyzeDockerfile(text: string): DockerfileAnalysis {
  const { instructions, usesHeredoc } = dockerInstructions(text);
  const argNames: string[] = [];
  const stages: DockerStage[] = [];
  // Per stage: the instructions that matter for the final image.
  const perStage: { cmd: boolean; entrypoint: boolean; exposed: number[] }[] = [];
  for (const ins of instructions) {
    if (ins.name === "FROM") {
      stages.push(fromStage(ins.args));
      perStage.push({ cmd: false, entrypoint: false, exposed: [] });
      continue;
    }
    if (ins.name === "ARG") {
      for (const w of splitWords(ins.args)) {
        const name = w.split("=")[0] ?? "";
        if (name !== "" && !argNames.includes(name)) argNames.push(name);
      }
      continue;
    }
    const current = perStage[perStage.length - 1];
    if (!current) continue; // before the first FROM only ARG is meaningful
    if (ins.name === "CMD") current.cmd = true;
    else if (ins.name === "ENTRYPOINT") current.entrypoint = true;
    else if (ins.name === "EXPOSE") current.exposed.push(...exposedPorts(ins.args));
  }

  // Walk from the final stage to the earlier stages it is built from.
  let hasCmd = false;
  let hasEntrypoint = false;
  const exposed: number[] = [];
  const seen = new Set<number>();
  let index = stages.length - 1;
  while (index >= 0 && !seen.has(index)) {
    seen.add(index);
    const s = perStage[index];
    if (!s) break;
    if (s.cmd && !hasEntrypoint) hasCmd = true; // a later ENTRYPOINT resets an inherited CMD
    if (s.entrypoint) hasEntrypoint = true;
    for (const p of s.exposed) if (!exposed.includes(p)) exposed.push(p);
    const base = (stages[index] as DockerStage).from.toLowerCase();
    let parent = -1;
    for (let j = index - 1; j >= 0; j--) {
      if (stages[j]?.alias?.toLowerCase() === base) {
        parent = j;
        break;
      }
    }
    index = parent;
  }
  return { instructions, hasCmd, hasEntrypoint, argNames, stages, exposed, usesHeredoc };
}
