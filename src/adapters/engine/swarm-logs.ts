// An instance's log on a swarm (ADR 0030): the service's, through the manager, and what was kept of a
// stopped one whose task the swarm deleted (swarm-kept.ts).
import type Docker from "dockerode";
import type { InstanceLogLine, LogRange } from "../../core/ports.js";
import { isNotFound } from "./docker-common.js";
import { type LogSink, logBuffer, logLines, noteLine, pumpLogs } from "./docker-logs.js";
import { type KeptLogs, mergeLines } from "./swarm-kept.js";
import { notFound, type SwarmServices } from "./swarm-services.js";

export class SwarmLogs {
  constructor(
    private readonly docker: Docker,
    private readonly svc: Pick<SwarmServices, "nodes">,
    private readonly kept: KeptLogs,
  ) {}

  /**
   * The instance's log. A stopped one's is what was kept when it stopped (the swarm deleted its task and
   * container) with what the service has now, each line once; a followed log is the service's.
   */
  async logs(id: string, opts: LogRange, onLine: LogSink, signal: AbortSignal): Promise<void> {
    const kept = opts.follow ? [] : await this.kept.lines(id);
    if (kept.length === 0) return this.serviceLog(id, opts, onLine, signal);
    const now: InstanceLogLine[] = [];
    await this.serviceLog(id, opts, (l) => void now.push(l), signal);
    const since = opts.since?.toISOString();
    const until = opts.until?.toISOString();
    const inRange = (l: InstanceLogLine) => (!since || l.at >= since) && (!until || l.at <= until);
    const lines = mergeLines(kept.filter(inRange), now);
    for (const l of opts.tail !== undefined ? lines.slice(-opts.tail) : lines) await onLine(l);
  }

  /**
   * The service's log, through the manager (GET /services/{id}/logs): the swarm brings each task's lines
   * from its node, followed across nodes, without reaching any node's engine. Every task of the instance is
   * in it (a restarted one's earlier lines too, as a restarted container's log) while the swarm keeps it.
   * The swarm has no `until`: later lines are dropped here.
   */
  async serviceLog(id: string, opts: LogRange, onLine: LogSink, signal: AbortSignal): Promise<void> {
    const service = this.docker.getService(id);
    const until = opts.until?.toISOString();
    const sink = (l: InstanceLogLine) => (until && l.at > until ? undefined : onLine(l));
    const base = {
      stdout: true,
      stderr: true,
      timestamps: true,
      ...(opts.since ? { since: Math.floor(opts.since.getTime() / 1000) } : {}),
      ...(opts.tail !== undefined ? { tail: opts.tail } : {}),
    };
    // The swarm's note that it could not read some of the log (a task's node is down), with the node's name.
    const noted = async (note: string) => {
      const nodes = await this.svc.nodes().catch(() => new Map<string, { name: string }>());
      return noteLine(note, new Map([...nodes].map(([nodeId, n]) => [nodeId, n.name])));
    };
    try {
      if (!opts.follow) {
        const buf = await logBuffer(
          (await service.logs({ ...base, follow: false })) as Buffer | NodeJS.ReadableStream,
        );
        const notes: string[] = [];
        for (const l of logLines(buf, (n) => notes.push(n))) await sink(l);
        for (const n of notes) await onLine(await noted(n));
        return;
      }
      const stream = (await service.logs({
        ...base,
        follow: true,
        abortSignal: signal,
      })) as NodeJS.ReadableStream;
      await pumpLogs(stream, sink, signal, (n) => void noted(n).then(onLine));
    } catch (e) {
      if (isNotFound(e)) throw notFound(id);
      throw e;
    }
  }
}
