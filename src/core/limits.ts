/**
 * What one app may use (ADR 0022): the ceiling an admin sets per app (largest flavor, instance count, total
 * memory), over the operator's defaults, and the caps on an app's variables. Pure: the server reads the
 * host's facts (memory, pid_max) in the config loader and the ceilings from the store, then asks here.
 */
import { FLAVOR_MEMORY_MIB, FLAVORS, type Flavor } from "./model.js";

/**
 * The engine's process limit of each instance (its cgroup's pids.max): the PIDs an instance may hold. 1024 is
 * four times Heroku's 256 of a standard dyno, and lets an app run 8 instances on a host whose pid_max is 32768
 * (a quarter of it); 4096 allowed only 2. Build containers keep 4096 (compilers fork many).
 */
export const INSTANCE_PIDS = 1024;

/** The most instances an app may have at all (the API's schema). */
export const MAX_INSTANCES = 20;

/** An app's ceiling: each null in an app's own record means "the server's default". */
export interface Ceiling {
  maxFlavor: Flavor;
  maxInstances: number;
  /** Instances x their flavor's memory, in MiB (a deploy's overlap with the old release not counted). */
  maxMemoryMiB: number;
}

export type CeilingOverrides = { [K in keyof Ceiling]: Ceiling[K] | null };

export const NO_OVERRIDES: CeilingOverrides = { maxFlavor: null, maxInstances: null, maxMemoryMiB: null };

/** The app's ceiling: what the admin set for it, else the server's default. */
export function effectiveCeiling(defaults: Ceiling, own: CeilingOverrides): Ceiling {
  return {
    maxFlavor: own.maxFlavor ?? defaults.maxFlavor,
    maxInstances: own.maxInstances ?? defaults.maxInstances,
    maxMemoryMiB: own.maxMemoryMiB ?? defaults.maxMemoryMiB,
  };
}

/** An app's size: what a scale, a create or a deploy asks for. */
export interface Size {
  flavor: Flavor;
  instances: number;
  /** Its builds' container (one at a time, not counted in the memory): no larger than maxFlavor either. */
  buildFlavor?: Flavor;
}

export const memoryOf = (s: Size): number => s.instances * FLAVOR_MEMORY_MIB[s.flavor];

/** The first limit a size passes, as the setting's name, its value and what was asked; null: it fits. */
export interface LimitBreach {
  limit: keyof Ceiling;
  /** The flag of `pier limits set` that raises it. */
  flag: string;
  message: string;
}

const rank = (f: Flavor) => FLAVORS.indexOf(f);

/** null if `size` fits in `ceiling`, else which limit it passes, with a message naming it and its value. */
export function ceilingBreach(size: Size, ceiling: Ceiling, appName: string): LimitBreach | null {
  if (rank(size.flavor) > rank(ceiling.maxFlavor)) {
    return {
      limit: "maxFlavor",
      flag: `--max-flavor ${size.flavor}`,
      message: `Flavor ${size.flavor} is larger than ${appName}'s largest allowed flavor, ${ceiling.maxFlavor} (limit maxFlavor).`,
    };
  }
  if (size.buildFlavor !== undefined && rank(size.buildFlavor) > rank(ceiling.maxFlavor)) {
    return {
      limit: "maxFlavor",
      flag: `--max-flavor ${size.buildFlavor}`,
      message: `Build flavor ${size.buildFlavor} is larger than ${appName}'s largest allowed flavor, ${ceiling.maxFlavor} (limit maxFlavor).`,
    };
  }
  if (size.instances > ceiling.maxInstances) {
    return {
      limit: "maxInstances",
      flag: `--max-instances ${size.instances}`,
      message: `${size.instances} instances are more than ${appName} may run: at most ${ceiling.maxInstances} (limit maxInstances).`,
    };
  }
  const memory = memoryOf(size);
  if (memory > ceiling.maxMemoryMiB) {
    return {
      limit: "maxMemoryMiB",
      flag: `--max-memory ${memory}`,
      message: `${size.instances} x ${size.flavor} is ${memory} MiB of memory, more than ${appName} may use: at most ${ceiling.maxMemoryMiB} MiB (limit maxMemoryMiB).`,
    };
  }
  return null;
}

/** The smaller of two flavors. */
export const smallerFlavor = (a: Flavor, b: Flavor): Flavor => (rank(a) <= rank(b) ? a : b);

/** The hint of a breach: who raises the limit, and how. */
export const breachHint = (b: LimitBreach, appName: string): string =>
  `Ask for less, or have an admin raise the limit: pier limits set ${b.flag} --app ${appName} (an admin token only; an app's token cannot change its limits).`;

/** The host facts the operator's defaults are derived from (read by the config loader). */
export interface HostFacts {
  /** The host's memory, in MiB. */
  memoryMiB: number;
  /** /proc/sys/kernel/pid_max. */
  pidMax: number;
}

/**
 * The operator's default ceiling on this host. An app's instances may hold a quarter of the host's PIDs
 * (so during a deploy's overlap, old and new instances together, half) and half of its memory (the overlap:
 * all of it at worst, for a moment); its largest flavor is the largest whose one instance fits in that.
 */
export function hostDefaults(host: HostFacts): Ceiling {
  const maxInstances = Math.min(MAX_INSTANCES, Math.max(1, Math.floor(host.pidMax / 4 / INSTANCE_PIDS)));
  const maxMemoryMiB = Math.max(FLAVOR_MEMORY_MIB.pico, Math.floor(host.memoryMiB / 2));
  return { maxFlavor: largestFitting(maxMemoryMiB), maxInstances, maxMemoryMiB };
}

/** The largest flavor one instance of which fits in `memoryMiB` (pico at least). */
export function largestFitting(memoryMiB: number): Flavor {
  const fitting = FLAVORS.filter((f) => FLAVOR_MEMORY_MIB[f] <= memoryMiB);
  return fitting[fitting.length - 1] ?? "pico";
}
