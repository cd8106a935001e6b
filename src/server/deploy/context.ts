import { randomBytes } from "node:crypto";
import type { LinkedEnvironment } from "../../core/addons.js";
import type { BucketMount, LinkedBucket } from "../../core/buckets.js";
import type { App, Deployment, Release } from "../../core/model.js";
import type { Engine, InstanceInfo, InstanceReach, ReleaseRegistry, Store } from "../../core/ports.js";
import type { DeployLogs } from "../deploy-logs.js";
import type { Instances, ReleaseToRun } from "../instances.js";
import type { AppLimits } from "../limits.js";
import type { RunSettings, Runtime } from "../runtimes/runtime.js";

export interface DeployRequest {
  commit: string;
  cause: string;
  withoutCache: boolean;
  /** The pushed objects live in git's quarantine until the push is accepted. */
  gitEnv?: Record<string, string>;
  /** Redeploy the current release's image with the app's new size (scale): no build. */
  reuseCurrentImage?: boolean;
  /** The app's new size (scale): recorded with the release, only if the deploy succeeds. */
  resize?: { instances?: number; flavor?: App["flavor"] };
  /** Redeploy this release's image (rollback): no build. */
  rollbackTo?: Release;
}

/** What the steps of a deploy use: the ports and the settings that shape a deploy. */
export interface StepDeps {
  store: Store;
  engine: Engine;
  /** Connections to instances from where the edge serves: the gate's probes (ADR 0030). */
  reach: InstanceReach;
  instances: Instances;
  logs: DeployLogs;
  repoDir: (appId: string) => string;
  runtimes: Partial<Record<App["type"], Runtime>>;
  listenTimeoutMs: number;
  stopGraceMs: number;
  /** Each app's ceiling (ADR 0022). */
  limits: Pick<AppLimits, "check">;
  /** The swarm's registry (ADR 0030): pruned releases are forgotten there too. None: one dockerd. */
  registry?: ReleaseRegistry | null;
  /**
   * Add-ons and links (ADR 0015): the app's environment with its links' variables, and the linked
   * add-ons joining the app's networks before its build and instances start. None: no links.
   */
  links?: {
    environment(appId: string, own: Record<string, string>): Promise<LinkedEnvironment>;
    attach(appId: string, network: { name: string; ipv6Subnet: string | null }): Promise<string[]>;
    /** The fs add-ons linked to the app: the buckets its CC_FS_BUCKET may name. */
    buckets(appId: string): Promise<LinkedBucket[]>;
  };
}

/** One deployment under way: what every step is given. */
export interface StepContext<D = StepDeps> {
  /** The ports a step uses: each step names the few it needs, so it can be tested alone. */
  deps: D;
  deployment: Deployment;
  request: DeployRequest;
  signal: AbortSignal;
  /** A line of the deploy log (masked by the log). */
  write: (line: string) => void;
}

/** The app as this deploy sees it, once its variables are read and checked (the variables step). */
export interface Plan {
  app: App;
  vars: Record<string, string>;
  linked: LinkedEnvironment | null;
  runtime: Runtime;
  settings: RunSettings;
  /** A task runs once to completion: created with --task "<command>", or CC_TASK=true. */
  task: boolean;
  healthPaths: string[];
  /** The platform variables of the build (instance type "build"). */
  common: Record<string, string>;
  /** The network linked add-ons joined, for the build; null without add-on links. */
  addonNetwork: string | null;
  /** The fs add-ons the instances mount (CC_FS_BUCKET), checked to be linked to the app. */
  buckets: BucketMount[];
}

/** The release's instances, started by the start step. */
export interface Started {
  toRun: ReleaseToRun;
  env: Record<string, string>;
  instances: InstanceInfo[];
}

/** What the next deploy's instance slots are prepared for, after a web deploy; null after a task. */
export interface NextShape {
  httpPort: number | null;
  tcpPort: number | null;
  ipv6Subnet: string | null;
  instances: number;
}

export const newId = (prefix: string) => `${prefix}-${randomBytes(6).toString("hex")}`;
export const now = () => new Date().toISOString();

/** Throws the signal's reason (a cancel, the time limit) if the deployment was aborted. */
export function checkAborted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason;
}
