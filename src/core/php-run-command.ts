// CC_RUN_COMMAND of the PHP application-server runtime against the contract's rule (section 4.4), and the
// project's paths as its variables name them. Pure.
import { posix } from "node:path";
import { hasControlCharacter, quoted } from "./plan-vars.js";

/**
 * A path relative to the project root (a leading / is the root, as CC_WEBROOT=/ is), normalized: "." for
 * the root, or the rule it breaks. Symlinks are the executor's to follow (PathFact "outside").
 */
export function projectPath(raw: string): { path: string } | { error: string } {
  const v = raw.trim();
  if (hasControlCharacter(v)) return { error: "must not contain control characters" };
  const p = posix.normalize(`./${v.replace(/^\/+/, "")}`).replace(/\/+$/, "");
  if (p === ".." || p.startsWith("../"))
    return { error: "leaves the project (paths are relative to its root)" };
  return { path: p === "" ? "." : p };
}

/** The rule of contract section 4.4, quoted by every refusal. */
export function runCommandRule(port: number): string {
  return `CC_RUN_COMMAND must start with \`phpserver php-server --listen 0.0.0.0:${port}\` (flags such as --debug, --mercure, --no-compress may follow) or \`phpserver run --config <path_to_config_file>\``;
}

export type RunCommand =
  | { kind: "php-server"; argv: string[]; root: string | null; worker: string | null }
  | { kind: "run"; argv: string[]; config: string };

const PHP_SERVER_FLAGS = new Set(["--debug", "-v", "--no-compress", "--access-log", "-a"]);
const SAFE_WORD = /^[A-Za-z0-9_./@%+=:,~-]+$/;

/** CC_RUN_COMMAND against the rule: its argv (run without a shell), or why it is refused. */
export function parseRunCommand(
  raw: string,
  port: number,
): { ok: true; cmd: RunCommand } | { ok: false; error: string } {
  const rule = runCommandRule(port);
  const argv = raw.trim().split(/\s+/);
  const refuse = (why: string) => ({ ok: false as const, error: `${rule}; ${quoted(raw.trim())} ${why}.` });
  if (argv[0] !== "phpserver") return refuse("does not start with phpserver");
  if (argv[1] === "run") {
    const [, , flag, config, ...rest] = argv;
    if (flag !== "--config" || config === undefined)
      return refuse("is missing --config <path_to_config_file>");
    if (rest.length > 0) return refuse(`has more after the config file (${rest.join(" ")})`);
    if (!SAFE_WORD.test(config)) return refuse("has a config path with characters a path should not hold");
    const p = projectPath(config);
    if ("error" in p) return refuse(`has a config file that ${p.error}`);
    return { ok: true, cmd: { kind: "run", argv: ["phpserver", "run", "--config", p.path], config: p.path } };
  }
  if (argv[1] !== "php-server" || argv[2] !== "--listen" || argv[3] !== `0.0.0.0:${port}`)
    return refuse(`does not start with \`phpserver php-server --listen 0.0.0.0:${port}\``);
  const out = argv.slice(0, 4);
  let root: string | null = null;
  let worker: string | null = null;
  for (let i = 4; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--mercure" || a === "-m")
      return refuse(
        "asks for --mercure: this Pier's phpserver serves no Mercure hub (run a hub as its own app and point MERCURE_URL at it)",
      );
    if (a === "--worker" || a === "-w" || a.startsWith("--worker=")) {
      const value = a.startsWith("--worker=") ? a.slice("--worker=".length) : argv[++i];
      const m = value === undefined ? null : /^([^,]+)(?:,(\d{1,3}))?$/.exec(value);
      if (!m || !SAFE_WORD.test(value as string)) return refuse("has --worker without FILE[,N]");
      const p = projectPath(m[1] as string);
      if ("error" in p) return refuse(`has a --worker script that ${p.error}`);
      worker = p.path;
      out.push("--worker", m[2] ? `${p.path},${m[2]}` : p.path);
      continue;
    }
    if (a === "--root" || a === "-r") {
      const dir = argv[++i];
      if (dir === undefined || !SAFE_WORD.test(dir)) return refuse("has --root without a folder");
      const p = projectPath(dir);
      if ("error" in p) return refuse(`has a --root that ${p.error}`);
      root = p.path;
      out.push("--root", p.path);
      continue;
    }
    if (!PHP_SERVER_FLAGS.has(a))
      return refuse(
        `has ${quoted(a)}, which is not a flag of phpserver php-server (--debug, --no-compress, --access-log, --root DIR)`,
      );
    out.push(a);
  }
  return { ok: true, cmd: { kind: "php-server", argv: out, root, worker } };
}
