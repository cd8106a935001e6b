/**
 * The container runtime's Install/Login phase as data: the settings read from the app's variables
 * (contract section 2.4) and the build plan of a Dockerfile. The engine adapter carries the plan out.
 */

import { dockerfileImageProblems } from "./build-bases.js";
import { analyzeDockerfile } from "./dockerfile.js";
import { DASHED_VARIABLE, instanceEnvironment } from "./env.js";
import { isSecretVariable } from "./env-secrets.js";
import { LABEL } from "./labels.js";
import { FLAVOR_MEMORY_MIB, type Flavor, releaseImageTag } from "./model.js";
import { hasControlCharacter, read } from "./plan-vars.js";

export interface DockerLogin {
  /** null: the default public registry. */
  server: string | null;
  username: string;
  password: string;
}

export interface DockerSettings {
  /** Relative to the repository root, normalised (`./a//Dockerfile` → `a/Dockerfile`). */
  dockerfile: string;
  httpPort: number;
  tcpPort: number | null;
  buildkit: boolean;
  login: DockerLogin | null;
  mountDockerSocket: boolean;
  ipv6Subnet: string | null;
}

export const DEFAULT_DOCKERFILE = "Dockerfile";
export const DEFAULT_HTTP_PORT = 8080;
const IPV6_UNDERSCORED = "CC_DOCKER_FIXED_CIDR_V6";

/** A repository-relative path, normalised, or the rule it breaks. */
export function relativeRepoPath(value: string): { path: string } | { error: string } {
  if (hasControlCharacter(value))
    return { error: "must not contain NUL, newline or other control characters" };
  if (value.includes("\\")) return { error: "must use / as separator, not \\" };
  if (value.startsWith("/"))
    return { error: "must be a relative path inside the repository, not an absolute path" };
  const parts = value.split("/");
  if (parts.includes(".."))
    return { error: 'must be a relative path inside the repository, without ".." segments' };
  const kept = parts.filter((p) => p !== "" && p !== ".");
  if (kept.length === 0 || value.endsWith("/")) return { error: "must name a file" };
  return { path: kept.join("/") };
}

function port(name: string, value: string, errors: string[]): number | null {
  const t = value.trim();
  const n = /^\d{1,5}$/.test(t) ? Number(t) : Number.NaN;
  if (!(n >= 1 && n <= 65535)) {
    errors.push(`${name}=${JSON.stringify(value)} is not a port: use an integer from 1 to 65535.`);
    return null;
  }
  return n;
}

function flag(name: string, value: string | undefined, errors: string[]): boolean {
  if (value === undefined) return false;
  const t = value.trim().toLowerCase();
  if (t === "true") return true;
  if (t === "false") return false;
  errors.push(`${name}=${JSON.stringify(value)} is not a boolean: use true or false.`);
  return false;
}

/** The host of a registry address (`registry.example.com:5000`, `https://host/v1/`, `[::1]:5000`), lowercased. */
export function registryServerHost(server: string): string {
  let s = server.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");
  s = s.replace(/^[^/@]*@/, "").split("/")[0] ?? "";
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracketed) return (bracketed[1] as string).toLowerCase();
  // One colon: host:port. More: a bare IPv6 address.
  if ((s.match(/:/g) ?? []).length === 1) s = s.slice(0, s.indexOf(":"));
  return s.replace(/\.$/, "").toLowerCase();
}

/**
 * Whether an address (or the name `localhost`) reaches the host Pier runs on, or its link: 127.0.0.0/8,
 * 0.0.0.0/8, 169.254.0.0/16, ::1, ::, fe80::/10, and their IPv4-mapped IPv6 forms.
 */
export function isHostOnlyAddress(host: string): boolean {
  const h = host.toLowerCase().replace(/%.*$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return a === 127 || a === 0 || (a === 169 && b === 254);
  }
  if (!h.includes(":")) return false;
  const bytes = parseIpv6(h);
  if (!bytes) return false;
  if (bytes.slice(0, 15).every((x) => x === 0) && (bytes[15] === 1 || bytes[15] === 0)) return true;
  if (bytes[0] === 0xfe && ((bytes[1] as number) & 0xc0) === 0x80) return true;
  const mapped = bytes.slice(0, 10).every((x) => x === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped && isHostOnlyAddress(bytes.slice(12).join("."));
}

/** The rule CC_DOCKER_LOGIN_SERVER breaks when it names the host itself, or null. */
export function loginServerProblem(server: string): string | null {
  const host = registryServerHost(server);
  if (!isHostOnlyAddress(host)) return null;
  return `CC_DOCKER_LOGIN_SERVER=${JSON.stringify(server)} names a loopback or link-local address (${host}): Pier does not send registry credentials to the host's own services. Use the registry's network name or address.`;
}

/** The 16 bytes of an IPv6 address (`::` compression and a trailing dotted IPv4 allowed), or null. */
export function parseIpv6(text: string): number[] | null {
  let s = text;
  const tailBytes: number[] = [];
  const v4 = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (v4) {
    for (const octet of v4.slice(2)) {
      if (octet.length > 1 && octet.startsWith("0")) return null;
      const n = Number(octet);
      if (n > 255) return null;
      tailBytes.push(n);
    }
    // Keep the separator so that `::1.2.3.4` and `a::1.2.3.4` split like `::x` and `a::x`.
    s = v4[1]!.endsWith("::") ? v4[1]! : v4[1]!.slice(0, -1);
  }
  const groupsWanted = v4 ? 6 : 8;
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const head = groups(halves[0] as string);
  const tail = halves.length === 2 ? groups(halves[1] as string) : [];
  const all = [...head, ...tail];
  if (!all.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return null;
  let words: number[];
  if (halves.length === 2) {
    if (all.length > groupsWanted - 1) return null;
    const zeros = new Array<number>(groupsWanted - all.length).fill(0);
    words = [
      ...head.map((g) => Number.parseInt(g, 16)),
      ...zeros,
      ...tail.map((g) => Number.parseInt(g, 16)),
    ];
  } else {
    if (all.length !== groupsWanted) return null;
    words = all.map((g) => Number.parseInt(g, 16));
  }
  const bytes: number[] = [];
  for (const w of words) bytes.push(w >> 8, w & 0xff);
  return [...bytes, ...tailBytes];
}

/** null when `value` is an IPv6 network `address/prefix` (prefix 1..128, no host bit set), else the rule. */
export function ipv6CidrProblem(value: string): string | null {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(value);
  if (!m) return "is not an IPv6 subnet: use address/prefix, e.g. fd00:1::/64";
  const bytes = parseIpv6(m[1] as string);
  if (!bytes) return `has an invalid IPv6 address (${JSON.stringify(m[1])})`;
  const digits = m[2] as string;
  const prefix = Number(digits);
  if ((digits.length > 1 && digits.startsWith("0")) || prefix < 1 || prefix > 128) {
    return "has an invalid prefix length: use 1 to 128";
  }
  for (let bit = prefix; bit < 128; bit++) {
    if (((bytes[bit >> 3] as number) >> (7 - (bit & 7))) & 1) {
      return `is not a network address: bits after the first ${prefix} must be zero`;
    }
  }
  return null;
}

/** The registry login (CC_DOCKER_LOGIN_*), or null: both or neither, each one line, the server an address. */
function loginSettings(vars: Record<string, string>, errors: string[]): DockerSettings["login"] {
  const username = read(vars, "CC_DOCKER_LOGIN_USERNAME");
  const password = read(vars, "CC_DOCKER_LOGIN_PASSWORD");
  const server = read(vars, "CC_DOCKER_LOGIN_SERVER");
  const before = errors.length;
  if ((username === undefined) !== (password === undefined)) {
    const missing = username === undefined ? "CC_DOCKER_LOGIN_USERNAME" : "CC_DOCKER_LOGIN_PASSWORD";
    const set = username === undefined ? "CC_DOCKER_LOGIN_PASSWORD" : "CC_DOCKER_LOGIN_USERNAME";
    errors.push(`${set} is set but ${missing} is not: set both for a registry login, or neither.`);
  } else if (username === undefined && server !== undefined) {
    errors.push(
      "CC_DOCKER_LOGIN_SERVER is set but CC_DOCKER_LOGIN_USERNAME and CC_DOCKER_LOGIN_PASSWORD are not: set them too, or unset it.",
    );
  }
  if (
    username !== undefined &&
    (/\s/.test(username) || hasControlCharacter(username) || username.startsWith("-"))
  ) {
    errors.push(
      "CC_DOCKER_LOGIN_USERNAME must not contain whitespace or control characters, nor start with -.",
    );
  }
  // Never the password itself in a message.
  if (password !== undefined && /[\r\n\0]/.test(password)) {
    errors.push("CC_DOCKER_LOGIN_PASSWORD must be a single line without NUL.");
  }
  if (server !== undefined && (/\s/.test(server) || hasControlCharacter(server) || server.startsWith("-"))) {
    errors.push(
      `CC_DOCKER_LOGIN_SERVER=${JSON.stringify(server)} is not a registry address: use a host name such as registry.example.com:5000.`,
    );
  }
  if (server !== undefined && errors.length === before) {
    const problem = loginServerProblem(server);
    if (problem) errors.push(problem);
  }
  if (errors.length === before && username !== undefined && password !== undefined) {
    return { server: server?.trim() ?? null, username, password };
  }
  return null;
}

/** The IPv6 subnet of the app's network (one of the two spellings of the variable), or null. */
function ipv6Setting(vars: Record<string, string>, errors: string[]): string | null {
  const dashed = read(vars, DASHED_VARIABLE);
  const underscored = read(vars, IPV6_UNDERSCORED);
  if (dashed !== undefined && underscored !== undefined && dashed.trim() !== underscored.trim()) {
    errors.push(`${DASHED_VARIABLE} and ${IPV6_UNDERSCORED} are both set, to different subnets: keep one.`);
  } else {
    const name = dashed !== undefined ? DASHED_VARIABLE : IPV6_UNDERSCORED;
    const subnet = (dashed ?? underscored)?.trim();
    if (subnet !== undefined) {
      const problem = ipv6CidrProblem(subnet);
      if (problem) errors.push(`${name}=${JSON.stringify(subnet)} ${problem}.`);
      else return subnet;
    }
  }
  return null;
}

/** Reads the container runtime's settings; every problem is listed, with the variable and the rule. */
export function dockerSettings(vars: Record<string, string>): { settings: DockerSettings; errors: string[] } {
  const errors: string[] = [];
  const settings: DockerSettings = {
    dockerfile: DEFAULT_DOCKERFILE,
    httpPort: DEFAULT_HTTP_PORT,
    tcpPort: null,
    buildkit: false,
    login: null,
    mountDockerSocket: false,
    ipv6Subnet: null,
  };

  const dockerfile = read(vars, "CC_DOCKERFILE");
  if (dockerfile !== undefined) {
    const r = relativeRepoPath(dockerfile);
    if ("path" in r) settings.dockerfile = r.path;
    else errors.push(`CC_DOCKERFILE=${JSON.stringify(dockerfile)} ${r.error}.`);
  }

  const http = read(vars, "CC_DOCKER_EXPOSED_HTTP_PORT");
  if (http !== undefined)
    settings.httpPort = port("CC_DOCKER_EXPOSED_HTTP_PORT", http, errors) ?? DEFAULT_HTTP_PORT;
  const tcp = read(vars, "CC_DOCKER_EXPOSED_TCP_PORT");
  if (tcp !== undefined) settings.tcpPort = port("CC_DOCKER_EXPOSED_TCP_PORT", tcp, errors);

  settings.buildkit = flag("CC_DOCKER_BUILDX", read(vars, "CC_DOCKER_BUILDX"), errors);
  settings.mountDockerSocket = flag("CC_MOUNT_DOCKER_SOCKET", read(vars, "CC_MOUNT_DOCKER_SOCKET"), errors);

  settings.login = loginSettings(vars, errors);
  const ipv6 = ipv6Setting(vars, errors);
  if (ipv6 !== null) settings.ipv6Subnet = ipv6;
  return { settings, errors };
}

export interface DockerBuildPlan {
  /** `pier-app/<appId>:<deploymentId>` */
  image: string;
  dockerfile: string;
  buildArgs: Record<string, string>;
  memoryBytes: number;
  buildkit: boolean;
  noCache: boolean;
  labels: Record<string, string>;
  login: DockerSettings["login"];
  /** What the Install/Login phase tells the deploy log. Never a secret value. */
  logLines: string[];
}

export interface DockerBuildInput {
  appId: string;
  deploymentId: string;
  buildFlavor: Flavor;
  /** The app's variables. */
  vars: Record<string, string>;
  /** The platform's variables for the build (INSTANCE_TYPE=build...). */
  platformVars: Record<string, string>;
  /** null: the file does not exist in the commit. */
  dockerfileText: string | null;
  withoutCache: boolean;
  settings: DockerSettings;
}

/** The largest build args, percent-encoded, in the engine's build request URL (its limit is 1 MiB). */
export const MAX_BUILD_ARGS_URL_BYTES = 768 * 1024;

function list(names: readonly string[]): string {
  return names.join(", ");
}

type DockerPlanResult = { ok: true; plan: DockerBuildPlan } | { ok: false; errors: string[] };
type Analyzed = ReturnType<typeof analyzeDockerfile>;

/** Step 1: the Dockerfile is there, has a FROM, and a CMD or an ENTRYPOINT for the final image. */
function checkDockerfile(
  path: string,
  text: string | null,
): { ok: true; df: Analyzed } | { ok: false; errors: string[] } {
  if (text === null) {
    return {
      ok: false,
      errors: [`No Dockerfile found at ${path} in the pushed commit; add one or set CC_DOCKERFILE.`],
    };
  }
  const df = analyzeDockerfile(text);
  if (df.stages.length === 0) {
    return {
      ok: false,
      errors: [`${path} has no FROM instruction: a Dockerfile starts its image with FROM <image>.`],
    };
  }
  if (!df.hasCmd && !df.hasEntrypoint) {
    return {
      ok: false,
      errors: [
        `${path} has neither CMD nor ENTRYPOINT in its final stage: add CMD ["<command>", "<arg>"...] (or an ENTRYPOINT) so the container knows what to run.`,
      ],
    };
  }
  return { ok: true, df };
}

/** Step 2: what the log says of the Dockerfile found and of the registry login. */
function dockerfileNotes(df: Analyzed, path: string, settings: DockerSettings, logLines: string[]): void {
  const stages = df.stages.length === 1 ? "1 stage" : `${df.stages.length} stages`;
  logLines.push(`Dockerfile found: ${path} (${stages}).`);
  const found = [df.hasEntrypoint ? "ENTRYPOINT" : null, df.hasCmd ? "CMD" : null].filter((x) => x !== null);
  logLines.push(`${found.join(" and ")} found for the final image.`);
  if (settings.login) {
    const where = settings.login.server ?? "the default registry";
    logLines.push(`Registry login to ${where} as ${settings.login.username}.`);
  } else {
    logLines.push(
      "No registry login (CC_DOCKER_LOGIN_USERNAME and CC_DOCKER_LOGIN_PASSWORD unset): pulls from the default registry are anonymous and rate-limited.",
    );
  }
}

/**
 * Step 3, the build args: each ARG the Dockerfile declares, valued from the build's instance environment
 * (own properties only: `ARG toString` must not find Object.prototype's toString); refused when a base image
 * is another app's or Pier's own, or when they do not fit in the engine's build request URL.
 */
function buildArgsFor(
  df: Analyzed,
  input: DockerBuildInput,
  path: string,
): { ok: true; buildArgs: Record<string, string>; unset: string[] } | { ok: false; errors: string[] } {
  const env = instanceEnvironment(input.vars, input.platformVars, input.platformVars.APP_HOME ?? "");
  const args: [string, string][] = [];
  const unset: string[] = [];
  for (const name of df.argNames) {
    if (Object.hasOwn(env, name)) args.push([name, env[name] as string]);
    else unset.push(name);
  }
  const buildArgs: Record<string, string> = Object.fromEntries(args);
  // Another app's release image (or one of Pier's own images) is never a base: checked before any build.
  const refused = dockerfileImageProblems(path, input.dockerfileText ?? "", buildArgs);
  if (refused.length > 0) return { ok: false, errors: refused };
  // The engine's build API takes build args in its URL only (percent-encoded JSON), and refuses a URL past
  // 1 MiB with "431 Request Header Fields Too Large" (ADR 0022): said here, naming the ARGs, instead.
  const urlBytes = encodeURIComponent(JSON.stringify(buildArgs)).length;
  if (urlBytes > MAX_BUILD_ARGS_URL_BYTES) {
    return {
      ok: false,
      errors: [
        `The build args ${list(Object.keys(buildArgs))} take ${urlBytes} bytes in the engine's build request URL: at most ${MAX_BUILD_ARGS_URL_BYTES}. Read large values at run time (they are in the instances' environment) rather than as ARGs.`,
      ],
    };
  }
  return { ok: true, buildArgs, unset };
}

/** Step 4: what the log says of the build args (and secret-looking ones), the builder, heredocs, ports, cache. */
function buildNotes(
  df: Analyzed,
  input: DockerBuildInput,
  args: { buildArgs: Record<string, string>; unset: string[] },
  logLines: string[],
): void {
  const { settings } = input;
  const passed = Object.keys(args.buildArgs);
  logLines.push(passed.length > 0 ? `Build args passed: ${list(passed)}.` : "Build args passed: none.");
  if (args.unset.length > 0) {
    logLines.push(
      `ARGs without a variable of that name (their Dockerfile default applies): ${list(args.unset)}.`,
    );
  }
  const secret = passed.filter(isSecretVariable);
  if (secret.length > 0) {
    logLines.push(
      `Warning: ${list(secret)} ${secret.length === 1 ? "looks" : "look"} secret; a build arg's value can be read from the image's history.`,
    );
  }
  logLines.push(
    settings.buildkit
      ? "Builder: BuildKit (CC_DOCKER_BUILDX=true)."
      : "Builder: classic docker build (set CC_DOCKER_BUILDX=true to use BuildKit).",
  );
  if (df.usesHeredoc && !settings.buildkit) {
    logLines.push(
      "Warning: the Dockerfile uses heredocs (<<EOF), which need BuildKit: set CC_DOCKER_BUILDX=true.",
    );
  }
  if (df.exposed.length > 0 && !df.exposed.includes(settings.httpPort)) {
    logLines.push(
      `Note: the Dockerfile EXPOSEs ${list(df.exposed.slice(0, 5).map(String))}${df.exposed.length > 5 ? "..." : ""} but the HTTP port is ${settings.httpPort}; set CC_DOCKER_EXPOSED_HTTP_PORT if the application listens elsewhere.`,
    );
  }
  if (input.withoutCache) logLines.push("Building without cache.");
}

/**
 * Checks the Dockerfile (present, with a CMD or an ENTRYPOINT for the final image) and plans its build.
 * Build args are the ARGs the Dockerfile declares, valued from the instance environment a build sees: the
 * app's variables (with `$APP_HOME` expanded), the platform's on top. A declared ARG with no such variable
 * is not passed, so its Dockerfile default applies.
 */
export function planDockerBuild(input: DockerBuildInput): DockerPlanResult {
  const { settings } = input;
  const path = settings.dockerfile;
  const checked = checkDockerfile(path, input.dockerfileText);
  if (!checked.ok) return checked;
  const { df } = checked;
  const logLines: string[] = [];
  dockerfileNotes(df, path, settings, logLines);
  const args = buildArgsFor(df, input, path);
  if (!args.ok) return args;
  buildNotes(df, input, args, logLines);
  return {
    ok: true,
    plan: {
      image: releaseImageTag(input.appId, input.deploymentId),
      dockerfile: path,
      buildArgs: args.buildArgs,
      memoryBytes: FLAVOR_MEMORY_MIB[input.buildFlavor] * 1024 * 1024,
      buildkit: settings.buildkit,
      noCache: input.withoutCache,
      labels: { [LABEL.managed]: "true", [LABEL.app]: input.appId, [LABEL.deployment]: input.deploymentId },
      login: settings.login,
      logLines,
    },
  };
}
