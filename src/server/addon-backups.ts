import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import {
  type Addon,
  type AddonBackup,
  type AddonKind,
  BACKUP_EXTENSIONS,
  backupDue,
  expiredBackups,
} from "../core/addons.js";
import { type Clock, type ClockTimer, systemClock } from "../core/clock.js";
import { PierError } from "../core/errors.js";
import type { AddonProvider, AddonRecordStore, BackupStore } from "../core/ports.js";
import { newId } from "./deployer.js";

/**
 * Add-on backups (ADR 0015): files under PIER_BACKUP_DIR, one folder per add-on, made by hand or by the
 * daily round and kept PIER_BACKUP_DAYS days; one backup or restore at a time per add-on.
 */
/** "an fs", "a kv". */
const article = (kind: string): string => (kind === "fs" ? "an" : "a");

export class AddonBackups {
  private readonly busy = new Map<string, Promise<unknown>>();
  private timer: ClockTimer | null = null;
  private readonly clock: Clock;

  constructor(
    private readonly deps: {
      addons: AddonRecordStore & BackupStore;
      providers: Record<AddonKind, AddonProvider>;
      logger: Logger;
      backupDir: string;
      backupDays: number;
      /** Default: the wall clock and Node's timers. */
      clock?: Clock;
    },
  ) {
    this.clock = deps.clock ?? systemClock;
  }

  private provider(a: Addon): AddonProvider {
    return this.deps.providers[a.kind];
  }

  private dirOf(a: Addon): string {
    return join(this.deps.backupDir, a.id);
  }

  private serial<T>(a: Addon, work: () => Promise<T>): Promise<T> {
    const run = (this.busy.get(a.id) ?? Promise.resolve()).catch(() => undefined).then(work);
    this.busy.set(a.id, run);
    const forget = () => {
      if (this.busy.get(a.id) === run) this.busy.delete(a.id);
    };
    run.then(forget, forget);
    return run;
  }

  /** A backup or a restore needs the add-on's server: one that is stopped or gone gets a clear error. */
  private async mustRun(a: Addon, what: string): Promise<void> {
    const p = this.provider(a);
    const { state } = await p.status(a.id);
    if (state === "running") return;
    throw new PierError(
      "ADDON_NOT_RUNNING",
      `The add-on '${a.name}' is ${state === "missing" ? "missing (its container is gone)" : state}: ${what}.`,
      state === "starting"
        ? "Try again in a moment (`pier addon status` says when it runs)."
        : `pier server starts its add-ons when it starts: restart it (or \`docker start ${p.host(a.id)}\` on the engine's host), then try again.`,
    );
  }

  list(a: Addon): Promise<AddonBackup[]> {
    return this.deps.addons.listBackups(a.id);
  }

  /** A backup now (`at`: the time recorded, the daily round's clock). */
  create(a: Addon, automatic = false, at?: Date): Promise<AddonBackup> {
    return this.serial(a, async () => {
      await this.mustRun(a, "nothing was backed up");
      const id = newId("bak");
      const file = `${new Date(this.clock.now()).toISOString().replace(/[:.]/g, "-")}-${id}.${BACKUP_EXTENSIONS[a.kind]}`;
      await mkdir(this.dirOf(a), { recursive: true, mode: 0o700 });
      const bytes = await this.provider(a).backup(a.id, join(this.dirOf(a), file));
      const b = await this.deps.addons.addBackup({
        id,
        addonId: a.id,
        file,
        bytes,
        automatic,
        createdAt: at?.toISOString(),
      });
      this.deps.logger.info({ addonId: a.id, backup: id, bytes, automatic }, "add-on backed up");
      return b;
    });
  }

  /**
   * Replaces a's data by a backup of `from` (default: of a itself). Another add-on's backup is taken only
   * when named (`from`, of the same kind: moving an add-on to another node is a create with --node and
   * this restore); the backup file is read where `from` keeps it, and stays there.
   */
  async restore(a: Addon, backupId: string, from: Addon = a): Promise<AddonBackup> {
    if (from.kind !== a.kind)
      throw new PierError(
        "INVALID_INPUT",
        `The add-on '${from.name}' is ${article(from.kind)} ${from.kind} add-on and '${a.name}' ${article(a.kind)} ${a.kind} one: a backup restores into an add-on of its own kind only. Nothing was restored.`,
        `Create a ${from.kind} add-on (pier addon create ${from.kind} NAME --node NODE) and restore into it.`,
      );
    const b = (await this.deps.addons.listBackups(from.id)).find((x) => x.id === backupId);
    if (!b) {
      const other = await this.ownerOfBackup(backupId);
      throw new PierError(
        "BACKUP_NOT_FOUND",
        other
          ? `The backup ${backupId} is of the add-on '${other}', not of '${from.name}': nothing was restored.`
          : `The add-on '${from.name}' has no backup ${backupId}.`,
        other && from.id === a.id
          ? `To restore another add-on's backup into ${a.name}: pier addon backup restore ${a.name} ${backupId} --from ${other}`
          : `See \`pier addon backup list ${from.name}\`.`,
      );
    }
    return this.serial(a, async () => {
      await this.mustRun(a, "nothing was restored, its data is as it was");
      await this.provider(a).restore(a.id, join(this.dirOf(from), b.file));
      this.deps.logger.info({ addonId: a.id, from: from.id, backup: b.id }, "add-on restored");
      return b;
    });
  }

  private async ownerOfBackup(backupId: string): Promise<string | null> {
    for (const x of await this.deps.addons.listAddons())
      if ((await this.deps.addons.listBackups(x.id)).some((b) => b.id === backupId)) return x.name;
    return null;
  }

  /**
   * One round of the daily automatic backups: each add-on whose newest backup is a day old (or that has
   * none) is backed up; automatic backups older than PIER_BACKUP_DAYS go (the newest automatic one stays).
   */
  async runDaily(now = new Date(this.clock.now())): Promise<{ made: number; deleted: number }> {
    let made = 0;
    let deleted = 0;
    for (const a of await this.deps.addons.listAddons()) {
      try {
        if (backupDue(await this.deps.addons.listBackups(a.id), now)) {
          await this.create(a, true, now);
          made++;
        }
        for (const old of expiredBackups(
          await this.deps.addons.listBackups(a.id),
          now,
          this.deps.backupDays,
        )) {
          await rm(join(this.dirOf(a), old.file), { force: true });
          await this.deps.addons.deleteBackup(old.id);
          deleted++;
        }
      } catch (err) {
        this.deps.logger.warn({ addonId: a.id, err: (err as Error).message }, "automatic backup failed");
      }
    }
    return { made, deleted };
  }

  /** Runs the daily backups a minute after start, then every hour. */
  start(everyMs = 3_600_000): void {
    const run = (nextMs: number) => {
      this.timer = this.clock.setTimeout(() => {
        run(everyMs);
        void this.runDaily().catch((err) => this.deps.logger.warn({ err }, "automatic backups failed"));
      }, nextMs);
    };
    run(60_000);
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
  }
}
