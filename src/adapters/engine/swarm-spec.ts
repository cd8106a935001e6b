// An instance as a Swarm service (ADR 0030): the service spec one Pier instance becomes, planned from its
// InstanceSpec without I/O, so that the table of cases in test/unit/adapters/swarm-spec.test.ts holds it.

import type { BucketMount } from "../../core/buckets.js";
import { PierError } from "../../core/errors.js";
import { instanceFilesystem } from "../../core/instance-fs.js";
import { LABEL, ROLE } from "../../core/labels.js";
import { INSTANCE_PIDS } from "../../core/limits.js";
import { cpuLimits } from "../../core/model.js";
import type { InstanceSpec } from "../../core/ports.js";
import { releaseVolume, VOLUME_LABEL } from "../../core/release-volumes.js";
import { addonVolume } from "./docker-addons.js";
import { DROPPED_CAPABILITIES } from "./docker-common.js";

const PIN = "node.id==";

/** The constraint that pins a task to one node. */
export const pinConstraint = (nodeId: string): string => `${PIN}${nodeId}`;

/** The node a service is pinned to by Pier's choice (not a bucket's `node.hostname==`), if any. */
export function pinnedNode(constraints: readonly string[] | undefined): string | null {
  const pin = constraints?.find((c) => c.startsWith(PIN) && /^\S+$/.test(c.slice(PIN.length)));
  return pin ? pin.slice(PIN.length) : null;
}

/** A mount of a service's container (the fields Pier sets). */
export interface ServiceMount {
  Type: "bind" | "tmpfs" | "volume";
  Target: string;
  /** Empty for a tmpfs; the volume's name for a volume. */
  Source: string;
  ReadOnly?: boolean;
  TmpfsOptions?: { SizeBytes: number; Mode: number };
}

/** A service's container (API 1.41, Docker 20.10): the fields any of Pier's services sets. */
export interface EngineContainerSpec {
  Image: string;
  Labels: Record<string, string>;
  /** Replaces the image's ENTRYPOINT (a command run like an instance: swarm-run.ts; the guard's loop). */
  Command?: string[];
  Args?: string[];
  Env: string[];
  Init?: boolean;
  StopGracePeriod: number;
  CapabilityDrop?: string[];
  /** API 1.41: a capability given to the task (NET_ADMIN: the node guard writes the node's nftables). */
  CapabilityAdd?: string[];
  ReadOnly?: boolean;
  Mounts?: ServiceMount[];
  /** The image's HEALTHCHECK, replaced (`["NONE"]`: off). */
  HealthCheck?: { Test: string[] };
}

/**
 * The engine's service spec (API 1.41, Docker 20.10): the fields any of Pier's services sets, one base for
 * the instances' (`ServiceSpec`) and the node guard's (`GuardServiceSpec`, src/adapters/swarm-guard.ts).
 */
export interface EngineServiceSpec {
  Name: string;
  Labels: Record<string, string>;
  TaskTemplate: {
    ContainerSpec: EngineContainerSpec;
    Resources?: {
      Limits: { MemoryBytes: number; NanoCPUs: number; Pids: number };
      Reservations: { MemoryBytes: number };
    };
    RestartPolicy: { Condition: "any" | "none"; Delay?: number };
    Placement?: { Preferences: { Spread: { SpreadDescriptor: string } }[]; Constraints?: string[] };
    Networks: { Target: string }[];
    LogDriver?: { Name: string; Options: Record<string, string> };
    /** Bumped to replace the task with a new one (a restart). */
    ForceUpdate?: number;
  };
  /** Replicated: that many tasks, placed by the scheduler; global: one on every node. */
  Mode: { Replicated: { Replicas: number } } | { Global: Record<string, never> };
  UpdateConfig?: { Parallelism: number; Order: "stop-first"; FailureAction: "continue" };
  EndpointSpec?: { Mode: "dnsrr" };
}

type Template = EngineServiceSpec["TaskTemplate"];

/** An instance's service spec: the base with everything an instance sets required. */
export type ServiceSpec = EngineServiceSpec & {
  TaskTemplate: Required<Pick<Template, "Resources" | "Placement" | "LogDriver">> & {
    ContainerSpec: Required<
      Pick<EngineContainerSpec, "Init" | "CapabilityDrop" | "ReadOnly" | "Mounts" | "HealthCheck">
    >;
  };
  Mode: { Replicated: { Replicas: number } };
  UpdateConfig: NonNullable<EngineServiceSpec["UpdateConfig"]>;
  EndpointSpec: NonNullable<EngineServiceSpec["EndpointSpec"]>;
};

/** What the plan needs besides the instance: resolved by the driver. */
export interface ServicePlanInputs {
  /** Pier's own labels (managed, scope). */
  own: Record<string, string>;
  /** The image as the nodes pull it: `<registry>/<repo>@sha256:...`. */
  image: string;
  /** The labels of the release image (its writable paths, a release volume it names). */
  imageLabels: Record<string, string>;
  /** The CPUs a flavor's share is capped at. */
  cpus: number;
  /** How long a task has between SIGTERM and SIGKILL (fixed when its service is made). */
  stopGraceMs: number;
  /** The node Pier chose for it (swarm-placement.ts): pinned there until its task started. */
  pin?: string;
}

const NS_PER_MS = 1_000_000;

/** The size in bytes a tmpfs option string (`rw,exec,size=N,mode=1777`) asks for. */
function tmpfsSize(options: string): number {
  const m = /(?:^|,)size=(\d+)(?:,|$)/.exec(options);
  return m ? Number(m[1]) : 0;
}

/** An fs bucket as a service mount: the add-on's volume on its node, read-write at its target. */
const bucketMount = (b: BucketMount): ServiceMount => ({
  Type: "volume",
  Source: addonVolume(b.addonId),
  Target: b.target,
});

/**
 * The node the instance's buckets pin it to. A bucket with no node (made before the swarm) or buckets on
 * two nodes (the deploy refuses those first) cannot be mounted: ENGINE_ERROR saying what to do.
 */
function bucketsNode(s: InstanceSpec): string | null {
  if (s.buckets.length === 0) return null;
  const nodes = new Set(s.buckets.map((b) => b.node ?? ""));
  const [node] = [...nodes];
  if (nodes.size === 1 && node) return node;
  throw new PierError(
    "ENGINE_ERROR",
    `The instance ${s.name} mounts fs buckets that are not all on one swarm node (${[...nodes].map((n) => n || "no node").join(", ")}): a bucket's data lives on its node.`,
    "Mount buckets of one node only; to move a bucket, create one with --node and restore the other's backup into it (docs/guide.md).",
  );
}

/**
 * The service one Pier instance runs as: 1 replica of the release image by digest, with the instance's
 * labels on the service and its container, its memory as limit and reservation (the scheduler places by
 * it), an init (SIGTERM reaches the app), `dnsrr` on the app's overlay (no IPVS), restarted whatever its exit
 * when `restart` (as the Docker adapter's unless-stopped: a stop is a scale to 0, which no policy undoes).
 */
export function serviceSpec(s: InstanceSpec, p: ServicePlanInputs): ServiceSpec {
  if (releaseVolume(p.imageLabels)) {
    throw new PierError(
      "ENGINE_ERROR",
      `The image ${s.image} keeps files in a release volume (label ${VOLUME_LABEL}), which lives on one machine: a swarm's instances run on any node.`,
      "Deploy the app again: on a swarm Pier puts vendor/ in the release image (ADR 0030); releases built on one machine cannot be rolled back to here.",
    );
  }
  const labels: Record<string, string> = { ...s.labels, ...p.own, [LABEL.role]: ROLE.instance };
  if (s.httpPort !== null) labels[LABEL.httpPort] = String(s.httpPort);
  if (s.tcpPort !== null) labels[LABEL.tcpPort] = String(s.tcpPort);
  const fs = instanceFilesystem(p.imageLabels, s.memoryBytes);
  const mounts: ServiceMount[] = Object.entries(fs.tmpfs).map(([target, options]) => ({
    Type: "tmpfs",
    Source: "",
    Target: target,
    TmpfsOptions: { SizeBytes: tmpfsSize(options), Mode: 0o1777 },
  }));
  mounts.push(...s.buckets.map(bucketMount));
  const node = bucketsNode(s);
  if (s.mountDockerSocket)
    mounts.push({ Type: "bind", Source: "/var/run/docker.sock", Target: "/var/run/docker.sock" });
  return {
    Name: s.name,
    Labels: labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: p.image,
        Labels: labels,
        // Args replaces the image's CMD (Command would replace its ENTRYPOINT): what Cmd does on Docker.
        ...(s.cmd ? { Args: s.cmd } : {}),
        Env: Object.entries({ ...s.env, TINI_KILL_PROCESS_GROUP: "1" }).map(([k, v]) => `${k}=${v}`),
        Init: true,
        StopGracePeriod: p.stopGraceMs * NS_PER_MS,
        CapabilityDrop: [...DROPPED_CAPABILITIES],
        ReadOnly: fs.readOnlyRoot,
        Mounts: mounts,
        // An image's HEALTHCHECK is off, as it is idle on one machine (where Docker only reports it): the
        // swarm would hold each start until its first check passed (30 s by default) and end an instance it
        // finds unhealthy, so the same image would deploy on one machine and fail or crawl on the swarm.
        // Pier's gate (CC_HEALTH_CHECK_PATH) decides, on both.
        HealthCheck: { Test: ["NONE"] },
      },
      Resources: {
        Limits: {
          MemoryBytes: s.memoryBytes,
          NanoCPUs: cpuLimits(s.memoryBytes, p.cpus).nanoCpus,
          Pids: INSTANCE_PIDS,
        },
        Reservations: { MemoryBytes: s.memoryBytes },
      },
      RestartPolicy: s.restart ? { Condition: "any", Delay: 1_000 * NS_PER_MS } : { Condition: "none" },
      Placement: {
        Preferences: [{ Spread: { SpreadDescriptor: "node.id" } }],
        // Pinned where its fs buckets' data lives (ADR 0030): the node's local volume is the bucket.
        ...(node
          ? { Constraints: [`node.hostname==${node}`] }
          : p.pin
            ? { Constraints: [pinConstraint(p.pin)] }
            : {}),
      },
      Networks: [{ Target: s.network.name }],
      LogDriver: { Name: "json-file", Options: { "max-size": "10m", "max-file": "3" } },
    },
    Mode: { Replicated: { Replicas: 1 } },
    UpdateConfig: { Parallelism: 1, Order: "stop-first", FailureAction: "continue" },
    EndpointSpec: { Mode: "dnsrr" },
  };
}

/**
 * The spec with the node Pier chose for its start no longer binding (swarm-placement.ts): only its placement
 * changes, which the swarm applies without replacing a task whose node still fits.
 */
export function unpinned<S extends Pick<EngineServiceSpec, "TaskTemplate">>(spec: S, nodeId: string): S {
  const placement = spec.TaskTemplate.Placement;
  if (!placement?.Constraints?.includes(pinConstraint(nodeId))) return spec;
  const rest = placement.Constraints.filter((c) => c !== pinConstraint(nodeId));
  const { Constraints: _pin, ...kept } = placement;
  return {
    ...spec,
    TaskTemplate: {
      ...spec.TaskTemplate,
      Placement: rest.length > 0 ? { ...kept, Constraints: rest } : kept,
    },
  };
}
