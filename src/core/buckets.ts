/**
 * File-system buckets (the `fs` add-on, issue 17 item 4; ADR 0015): the hosted platform's way. A link gives
 * the app `BUCKET_HOST=<bucket>`; the app says where to mount it with its own `CC_FS_BUCKET=<path>:<bucket>`
 * (and `CC_FS_BUCKET_1` ... `CC_FS_BUCKET_N` for more), `<path>` relative to the app's root. Pure: what the
 * variables ask for, checked, and the mounts of an instance in Pier's words (the engine maps an add-on to
 * its volume).
 */

/** A variable that names a bucket mount: CC_FS_BUCKET, CC_FS_BUCKET_1, CC_FS_BUCKET_2, ... */
const BUCKET_VARIABLE = /^CC_FS_BUCKET(_[1-9][0-9]{0,2})?$/;

/** What a path may hold: no `:` (the separator), `,`, spaces or control characters. */
const PATH_CHARS = /^[A-Za-z0-9._@+/-]+$/;

export const isBucketVariable = (name: string): boolean => BUCKET_VARIABLE.test(name);

/** One mount a variable asks for: `path` is normalized (`/wp-content/uploads`, no trailing slash). */
export interface BucketRequest {
  variable: string;
  path: string;
  bucket: string;
}

/** An add-on volume an instance mounts, in Pier's words: the add-on and where inside the instance. */
export interface BucketMount {
  addonId: string;
  target: string;
  /** The swarm node the bucket's data lives on (Addon.node, ADR 0030); absent or null on one dockerd. */
  node?: string | null;
}

/** A bucket an app may mount: an fs add-on linked to it. `host` is its bucket name (BUCKET_HOST). */
export interface LinkedBucket {
  id: string;
  name: string;
  host: string;
  /** The swarm node its data lives on (Addon.node); null or absent on one dockerd. */
  node?: string | null;
}

/** The request of one `CC_FS_BUCKET*` value, or why it is not one (naming the variable and the rule). */
export function parseBucketVariable(variable: string, value: string): BucketRequest | string {
  const shape = `${variable} must be <path>:<bucket> (e.g. /wp-content/uploads:<the BUCKET_HOST of a linked fs add-on>)`;
  const i = value.lastIndexOf(":");
  if (i <= 0 || i === value.length - 1) return `${shape}; it is '${value}'.`;
  const raw = value.slice(0, i).trim();
  const bucket = value.slice(i + 1).trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(bucket))
    return `${variable}: '${bucket}' is not a bucket name (letters, digits, - and _).`;
  const path = `/${raw.split("/").filter(Boolean).join("/")}`;
  if (!PATH_CHARS.test(raw))
    return `${variable}: the path '${raw}' may hold only letters, digits and . _ @ + - /.`;
  const parts = path.split("/").slice(1);
  if (parts.some((p) => p === ".." || p === "."))
    return `${variable}: the path '${raw}' must stay inside the app's folder (no . or .. in it).`;
  if (path === "/") return `${variable}: the path must name a folder inside the app, not the app's root.`;
  return { variable, path, bucket };
}

/** Every mount the variables ask for, in the variables' order, and the problems, each naming its variable. */
export function bucketRequests(vars: Readonly<Record<string, string>>): {
  requests: BucketRequest[];
  errors: string[];
} {
  const requests: BucketRequest[] = [];
  const errors: string[] = [];
  const names = Object.keys(vars)
    .filter(isBucketVariable)
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  for (const name of names) {
    const r = parseBucketVariable(name, vars[name] ?? "");
    if (typeof r === "string") errors.push(r);
    else {
      const twice = requests.find((x) => x.path === r.path);
      if (twice) errors.push(`${name} and ${twice.variable} both mount a bucket at ${r.path}.`);
      else requests.push(r);
    }
  }
  return { requests, errors };
}

/** The linked bucket a request names: by its bucket name (BUCKET_HOST) or by the add-on's name. */
export const bucketOf = (r: BucketRequest, linked: readonly LinkedBucket[]): LinkedBucket | undefined =>
  linked.find((b) => b.host === r.bucket) ?? linked.find((b) => b.name === r.bucket);

/** Why a request cannot be mounted in this app: its bucket is not a linked fs add-on's. */
export const unlinkedProblem = (r: BucketRequest, appName: string): string =>
  `${r.variable} names the bucket '${r.bucket}', which is not an fs add-on linked to ${appName}.`;

/**
 * The mounts of the app's instances: each request's bucket among the app's linked fs add-ons, at
 * `<appHome><path>`. A bucket that is not linked (never, or unlinked since) is an error naming it.
 */
export function bucketMounts(
  vars: Readonly<Record<string, string>>,
  linked: readonly LinkedBucket[],
  appName: string,
  appHome: string,
): { mounts: BucketMount[]; errors: string[] } {
  const { requests, errors } = bucketRequests(vars);
  const mounts: BucketMount[] = [];
  for (const r of requests) {
    const b = bucketOf(r, linked);
    if (!b) errors.push(unlinkedProblem(r, appName));
    else mounts.push({ addonId: b.id, target: `${appHome}${r.path}`, ...(b.node ? { node: b.node } : {}) });
  }
  return { mounts, errors };
}

/**
 * The node an app's instances are pinned to by the buckets they mount (ADR 0030: a bucket's data stays on
 * its node, so its apps run there): null when no mount names a node (one dockerd, or no bucket), a string
 * when they all name the same one, and an error naming each bucket's node when they name several.
 */
export function bucketNode(
  mounts: readonly BucketMount[],
  linked: readonly LinkedBucket[],
  appName: string,
): { node: string | null; error?: string } {
  const nodes = [...new Set(mounts.map((m) => m.node).filter((n): n is string => !!n))];
  if (nodes.length <= 1) return { node: nodes[0] ?? null };
  const where = mounts
    .filter((m) => m.node)
    .map((m) => `${linked.find((b) => b.id === m.addonId)?.name ?? m.addonId} on ${m.node}`);
  return {
    node: null,
    error: `${appName} mounts fs buckets on different nodes (${[...new Set(where)].join(", ")}): its instances can run on one node only, where its buckets live.`,
  };
}
