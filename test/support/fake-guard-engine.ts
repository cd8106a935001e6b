// The manager's engine as the node guard sees it (GuardEngine, src/adapters/swarm-guard.ts): services in
// memory, with the engine's prefix-matching name filter, tasks the tests place on nodes, local images' pushed
// digests and what the registry holds, and every call recorded.
import type {
  GuardEngine,
  GuardEngineTask,
  GuardService,
  GuardServiceSpec,
} from "../../src/adapters/swarm-guard.js";

export class FakeGuardEngine implements GuardEngine {
  readonly services = new Map<string, { version: number; spec: GuardServiceSpec }>();
  readonly calls: string[] = [];
  /** Each service's tasks (by service id), as the tests place them. */
  readonly tasks = new Map<string, GuardEngineTask[]>();
  /** Each local image's RepoDigests. */
  readonly digests = new Map<string, string[]>();
  /** The images (by digest) the registry holds. */
  readonly registry = new Set<string>();
  private next = 1;

  async listTasks(opts: { filters: string }): Promise<GuardEngineTask[]> {
    const ids = (JSON.parse(opts.filters) as { service?: string[] }).service ?? [];
    return ids.flatMap((id) => this.tasks.get(id) ?? []);
  }

  async repoDigests(image: string): Promise<string[]> {
    return [...(this.digests.get(image) ?? [])];
  }

  async inRegistry(image: string): Promise<boolean> {
    this.calls.push(`registry ${image}`);
    return this.registry.has(image);
  }

  async listServices(opts: { filters: string }): Promise<GuardService[]> {
    const names = (JSON.parse(opts.filters) as { name?: string[] }).name ?? [];
    return [...this.services]
      .filter(([, s]) => names.length === 0 || names.some((n) => s.spec.Name.startsWith(n)))
      .map(([id, s]) => ({ ID: id, Version: { Index: s.version }, Spec: s.spec }));
  }

  async createService(spec: GuardServiceSpec): Promise<unknown> {
    this.calls.push(`create ${spec.Name}`);
    this.services.set(`svc${this.next++}`, { version: 1, spec });
    return {};
  }

  async updateService(id: string, version: number, spec: GuardServiceSpec): Promise<unknown> {
    const s = this.services.get(id);
    if (!s || s.version !== version) throw new Error(`update out of sequence: ${id} ${version}`);
    this.calls.push(`update ${spec.Name}`);
    this.services.set(id, { version: version + 1, spec });
    return {};
  }

  async removeService(id: string): Promise<unknown> {
    const s = this.services.get(id);
    this.calls.push(`remove ${s?.spec.Name ?? id}`);
    this.services.delete(id);
    return {};
  }
}
