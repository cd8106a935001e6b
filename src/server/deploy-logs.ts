import type { LogLine } from "../core/model.js";
import type { Store } from "../core/ports.js";

interface Live {
  lines: LogLine[];
  subscribers: Set<(l: LogLine) => void>;
  enders: Set<() => void>;
}

/**
 * The log of each deployment: every line is stored at once (so a crash loses nothing) and handed to
 * whoever follows it (the pusher's `remote:` lines, `pier logs --deployment -f`, the console).
 */
export class DeployLogs {
  private readonly live = new Map<string, Live>();

  constructor(private readonly store: Store) {}

  open(deploymentId: string): void {
    if (!this.live.has(deploymentId))
      this.live.set(deploymentId, { lines: [], subscribers: new Set(), enders: new Set() });
  }

  write(deploymentId: string, line: string): void {
    const entry: LogLine = { at: new Date().toISOString(), line };
    const l = this.live.get(deploymentId);
    if (l) {
      l.lines.push(entry);
      for (const s of l.subscribers) s(entry);
    }
    void this.store.appendDeployLog(deploymentId, [entry]);
  }

  close(deploymentId: string): void {
    const l = this.live.get(deploymentId);
    if (!l) return;
    this.live.delete(deploymentId);
    for (const e of l.enders) e();
  }

  isLive(deploymentId: string): boolean {
    return this.live.has(deploymentId);
  }

  async read(deploymentId: string): Promise<LogLine[]> {
    const l = this.live.get(deploymentId);
    return l ? [...l.lines] : this.store.deployLog(deploymentId);
  }

  /** Delivers the lines so far, then each new one, then calls onEnd once the deployment ends. */
  async follow(deploymentId: string, onLine: (l: LogLine) => void, onEnd: () => void): Promise<() => void> {
    const l = this.live.get(deploymentId);
    if (!l) {
      for (const line of await this.store.deployLog(deploymentId)) onLine(line);
      onEnd();
      return () => undefined;
    }
    for (const line of l.lines) onLine(line);
    l.subscribers.add(onLine);
    l.enders.add(onEnd);
    return () => {
      l.subscribers.delete(onLine);
      l.enders.delete(onEnd);
    };
  }
}
