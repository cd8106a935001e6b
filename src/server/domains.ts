import type { Logger } from "pino";
import { AcmeUnavailable, type CertificateIssuer } from "../adapters/acme.js";
import { type Clock, type ClockTimer, systemClock } from "../core/clock.js";
import {
  type CertificatePair,
  certificateFacts,
  checkCertificate,
  type Domain,
  domainNameProblem,
  edgePem,
  retryDelay,
  servingPatch,
} from "../core/domains.js";
import { PierError } from "../core/errors.js";
import type { App } from "../core/model.js";
import type { DomainStore, TlsEdge } from "../core/ports.js";
import { type DomainView, domainView } from "./domain-view.js";

export { type DomainView, domainsByApp } from "./domain-view.js";

/**
 * Custom domains of apps and their certificates (ADR 0018). Adding a domain routes it to the app on the
 * HTTP and HTTPS edges at once, then obtains a certificate from the ACME server in the background; a timer
 * renews certificates before they expire (renewalTime), retrying with backoff (retryDelay). A failure is
 * recorded on the domain and logged; the current certificate, if any, keeps serving.
 */
export class DomainService {
  /** Issues under way, by domain: one at a time per domain. */
  private readonly issuing = new Map<string, Promise<Domain>>();
  /** Orders go to the ACME server one at a time, whatever the number of domains (spaced, never a burst). */
  private acmeQueue: Promise<unknown> = Promise.resolve();
  /**
   * The ACME server itself failed (unreachable, 5xx, rate limited): no automatic attempt for any domain
   * before this time (ms), so hundreds of due domains do not hammer it; doubles while it keeps failing.
   */
  private acmePausedUntil = 0;
  private acmeOutages = 0;
  /** What the last outage of the ACME server was (`no answer`, ...), told to domains asked for during its pause. */
  private acmeOutageWhy = "";
  private timer: ClockTimer | null = null;
  private readonly clock: Clock;

  constructor(
    private readonly deps: {
      store: DomainStore;
      tls: TlsEdge;
      /** null: PIER_ACME_DIRECTORY=off (only users' certificates). */
      issuer: CertificateIssuer | null;
      /** Makes the edge route the app's domains (Instances.refreshEdge). */
      refreshEdge: (appId: string) => Promise<void>;
      logger: Logger;
      pierDomain: string;
      httpsPort: number;
      /** The first retry after a failure waits this long (default 5 min), doubling up to 6 h. */
      retryBaseMs?: number;
      /** Default: the wall clock and Node's timers. */
      clock?: Clock;
    },
  ) {
    this.clock = deps.clock ?? systemClock;
  }

  view(d: Domain, app: App): DomainView {
    return domainView(d, app, this.deps.httpsPort);
  }

  async list(app: App): Promise<DomainView[]> {
    return (await this.deps.store.listDomains(app.id)).map((d) => this.view(d, app));
  }

  private async owned(app: App, name: string): Promise<Domain> {
    const d = await this.deps.store.findDomain(name.toLowerCase());
    if (!d || d.appId !== app.id)
      throw new PierError(
        "DOMAIN_NOT_FOUND",
        `The app ${app.name} has no domain ${name}.`,
        "See `pier domain`.",
      );
    return d;
  }

  /** Why the app cannot take the domain `name`, or nothing. */
  private check(app: App, name: string): void {
    const bad = domainNameProblem(name, this.deps.pierDomain);
    if (bad) throw new PierError("INVALID_INPUT", bad);
    if (app.task !== null)
      throw new PierError("INVALID_INPUT", `${app.name} is a task app: it serves no HTTP, so no domain.`);
  }

  async add(app: App, rawName: string): Promise<DomainView> {
    const name = rawName.trim().toLowerCase();
    this.check(app, name);
    const d = await this.deps.store.addDomain({
      name,
      appId: app.id,
      nextAttemptAt: this.deps.issuer ? new Date(this.clock.now()).toISOString() : null,
    });
    try {
      await this.deps.refreshEdge(app.id);
    } catch (e) {
      // Not routed: not recorded either (the next refresh would route it, with nothing saying so now).
      await this.deps.store.deleteDomain(name).catch(() => undefined);
      throw e;
    }
    this.deps.logger.info({ domain: name, appId: app.id }, "domain added");
    if (this.deps.issuer) void this.issue(name).catch(() => undefined);
    return this.view(d, app);
  }

  async remove(app: App, name: string): Promise<void> {
    const d = await this.owned(app, name);
    await this.deps.store.deleteDomain(d.name);
    await this.deps.refreshEdge(app.id);
    await this.deps.tls.removeCertificate(d.name);
    this.deps.logger.info({ domain: d.name, appId: app.id }, "domain removed");
  }

  /**
   * Obtains a new certificate now (a renewal ahead of time, or a retry); throws what the ACME server said.
   * The ACME account (and its rate limits: Let's Encrypt's new orders per account) is shared by every app:
   * an app's token waits out its domain's backoff after a failure, and the server's pause after an outage;
   * an admin token may retry at once (after fixing DNS, say).
   */
  async renew(app: App, name: string, by: { admin: boolean; toAcme?: boolean }): Promise<DomainView> {
    const d = await this.owned(app, name);
    // The user's own certificate is theirs: a renewal does not silently replace it with an ACME one.
    if (d.source === "user" && !by.toAcme)
      throw new PierError(
        "CONFLICT",
        `${d.name} serves your own certificate: Pier does not renew it.`,
        `Set a new one (pier domain cert set ${d.name} --cert FILE --key FILE --app ${app.name}), or switch it to a certificate from the ACME server (pier domain renew ${d.name} --acme --app ${app.name}; yours serves until that one is installed).`,
      );
    if (!this.deps.issuer)
      throw new PierError(
        "CONFLICT",
        "ACME is off on this server (PIER_ACME_DIRECTORY=off).",
        `Set a certificate: pier domain cert set ${d.name} --cert FILE --key FILE --app ${app.name}`,
      );
    if (!by.admin) {
      const now = this.clock.now();
      const waitDomain = d.failures > 0 && d.nextAttemptAt !== null ? Date.parse(d.nextAttemptAt) : 0;
      const until = Math.max(waitDomain, this.acmePausedUntil);
      if (until > now && !this.issuing.has(d.name))
        throw new PierError(
          "CONFLICT",
          `The last attempt for ${d.name} failed (${d.lastError ?? "the ACME server was unavailable"}); the next is at ${new Date(until).toISOString()}.`,
          "Pier retries by itself then; an admin token may retry now (pier domain renew with an admin token).",
        );
    }
    return this.view(await this.issue(d.name, true), app);
  }

  /** Serves the user's own certificate for the domain (added when missing); it is not renewed by Pier. */
  async setCertificate(app: App, rawName: string, pair: CertificatePair): Promise<DomainView> {
    const name = rawName.trim().toLowerCase();
    this.check(app, name);
    const facts = checkCertificate(pair, name);
    const pem = edgePem(pair);
    let d = await this.deps.store.findDomain(name);
    if (d && d.appId !== app.id) await this.owned(app, name);
    const added = !d;
    if (!d) {
      d = await this.deps.store.addDomain({ name, appId: app.id, nextAttemptAt: null });
      await this.deps.refreshEdge(app.id);
    }
    let saved: Domain;
    try {
      saved = await this.installThenRecord(name, pem, () =>
        this.deps.store.updateDomain(name, servingPatch("user", facts), pair),
      );
    } catch (e) {
      // A domain this call added goes again: not left behind pending, with no certificate and no attempt.
      if (added) {
        await this.deps.store.deleteDomain(name).catch(() => undefined);
        await this.deps.refreshEdge(app.id).catch(() => undefined);
      }
      throw e;
    }
    this.deps.logger.info(
      { domain: name, serial: facts.serial, notAfter: facts.notAfter },
      "user certificate set",
    );
    return this.view(saved, app);
  }

  /**
   * Serves `pem` on the edge, then records it (`record`). If the record fails, the edge goes back to what
   * the store says (the previous certificate, or none): nothing serves that the store does not know of.
   */
  private async installThenRecord(name: string, pem: string, record: () => Promise<Domain>): Promise<Domain> {
    const { store, tls } = this.deps;
    const previous = await store.domainCertificate(name);
    await tls.installCertificate(name, pem);
    try {
      return await record();
    } catch (e) {
      const back = previous ? tls.installCertificate(name, edgePem(previous)) : tls.removeCertificate(name);
      await back.catch((err: Error) =>
        this.deps.logger.warn(
          { domain: name, err: err.message },
          "could not put the previous certificate back",
        ),
      );
      throw e;
    }
  }

  /**
   * Obtains and installs a certificate for the domain; records the outcome on it. One order at a time for
   * the whole server; `manual` (pier domain renew) goes even while automatic attempts wait out an outage.
   */
  private issue(name: string, manual = false): Promise<Domain> {
    const running = this.issuing.get(name);
    if (running) return running;
    const run = this.acmeQueue
      .then(() => this.issueNow(name, manual))
      .finally(() => {
        this.issuing.delete(name);
        void this.schedule();
      });
    this.acmeQueue = run.catch(() => undefined);
    this.issuing.set(name, run);
    return run;
  }

  private async issueNow(name: string, manual: boolean): Promise<Domain> {
    const { store, issuer, logger } = this.deps;
    const d = await store.findDomain(name);
    if (!d) throw new PierError("DOMAIN_NOT_FOUND", `No domain ${name}.`);
    if (!issuer) return d;
    // A user's certificate set since this attempt was queued: Pier does not replace it by itself.
    if (!manual && d.source !== "acme") return d;
    // Waiting out an outage of the ACME server: the domain stays due, the next tick after the pause takes it;
    // it says why it waits and until when (a domain added during the pause would otherwise show no reason).
    if (!manual && this.clock.now() < this.acmePausedUntil) {
      const lastError = `The ACME server ${issuer.directory} is unavailable, no certificate for ${name}: ${this.acmeOutageWhy}`;
      if (d.lastError === lastError) return d;
      return store.updateDomain(name, {
        state: d.state === "issued" ? "issued" : "failed",
        lastError,
        nextAttemptAt: new Date(this.acmePausedUntil).toISOString(),
      });
    }
    const renewal = d.state === "issued";
    logger.info(
      { domain: name, directory: issuer.directory },
      renewal ? "renewing certificate" : "obtaining certificate",
    );
    try {
      let pair: CertificatePair;
      try {
        pair = await issuer.obtain(name, this.deps.tls);
      } catch (e) {
        if (e instanceof AcmeUnavailable) {
          this.acmeOutages++;
          this.acmeOutageWhy = e.why;
          this.acmePausedUntil = this.clock.now() + retryDelay(this.acmeOutages, this.deps.retryBaseMs);
          logger.warn(
            { directory: issuer.directory, until: new Date(this.acmePausedUntil).toISOString() },
            "the ACME server is unavailable: no certificate is asked for until then",
          );
        }
        throw e;
      }
      this.acmeOutages = 0;
      this.acmePausedUntil = 0;
      const facts = certificateFacts(pair.certPem);
      const pem = edgePem(pair);
      const current = await store.findDomain(name);
      if (!current) return d; // removed meanwhile
      if (!manual && current.source !== "acme") return current; // a user's certificate set meanwhile
      const saved = await this.installThenRecord(name, pem, () =>
        store.updateDomain(name, servingPatch("acme", facts), pair),
      );
      logger.info(
        { domain: name, serial: facts.serial, notAfter: facts.notAfter, issuer: facts.issuer },
        renewal ? "certificate renewed" : "certificate obtained",
      );
      return saved;
    } catch (e) {
      throw await this.failed(d, e);
    }
  }

  /** Records a failed attempt on the domain (its error, the next attempt, backoff); the error to throw. */
  private async failed(d: Domain, e: unknown): Promise<PierError> {
    const { store, logger } = this.deps;
    const message =
      e instanceof PierError
        ? e.message
        : `could not install or record the certificate: ${(e as Error).message}`;
    const failures = d.failures + 1;
    const next = new Date(this.clock.now() + retryDelay(failures, this.deps.retryBaseMs));
    try {
      if (await store.findDomain(d.name))
        await store.updateDomain(d.name, {
          state: d.state === "issued" ? "issued" : "failed",
          lastError: message,
          failures,
          nextAttemptAt: next.toISOString(),
        });
    } catch (err) {
      logger.warn({ domain: d.name, err: (err as Error).message }, "could not record the failure");
    }
    logger.warn(
      { domain: d.name, failures, nextAttemptAt: next.toISOString(), err: message },
      d.state === "issued"
        ? "certificate renewal failed: the current certificate keeps serving"
        : "no certificate obtained",
    );
    return e instanceof PierError ? e : new PierError("ACME_ERROR", message);
  }

  /**
   * Brings the edge in step with the store (certificates missing on it installed, those of deleted domains
   * removed), then obtains or renews every certificate that is due.
   */
  /** Removes from the edge the certificates of domains no longer in the store (a deleted app's, at once). */
  async removeOrphans(): Promise<void> {
    const { store, tls, logger } = this.deps;
    const known = new Set((await store.listDomains()).map((d) => d.name));
    for (const n of await tls.certificates())
      if (!known.has(n)) {
        await tls.removeCertificate(n);
        logger.info({ domain: n }, "certificate of a removed domain taken off the edge");
      }
  }

  async tick(): Promise<void> {
    const { store, tls, logger } = this.deps;
    await this.removeOrphans();
    const domains = await store.listDomains();
    const onEdge = new Set(await tls.served());
    for (const d of domains) {
      if (onEdge.has(d.name) || d.state !== "issued") continue;
      const pair = await store.domainCertificate(d.name);
      if (!pair) continue;
      try {
        await tls.installCertificate(d.name, edgePem(pair));
        logger.info({ domain: d.name }, "certificate installed on the edge again");
      } catch (e) {
        // One certificate the edge refuses keeps no other from being installed.
        logger.warn({ domain: d.name, err: (e as Error).message }, "could not install the certificate");
      }
    }
    if (!this.deps.issuer) return;
    const now = this.clock.now();
    for (const d of domains) {
      if (d.source !== "acme" || d.nextAttemptAt === null || Date.parse(d.nextAttemptAt) > now) continue;
      if (this.clock.now() < this.acmePausedUntil) break;
      await this.issue(d.name).catch(() => undefined);
    }
  }

  private running = false;
  private stopped = true;
  private maxWaitMs = 60_000;

  /**
   * Runs tick() now, then again when the next certificate is due (its renewal time, or its retry), and at
   * least every `maxWaitMs`: a short-lived certificate is renewed on time, not up to a minute late.
   */
  start(maxWaitMs = 60_000): void {
    this.maxWaitMs = maxWaitMs;
    this.stopped = false;
    void this.loop();
  }

  private async loop(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    this.timer?.cancel();
    this.timer = null;
    await this.tick().catch((err: Error) =>
      this.deps.logger.warn({ err: err.message }, "could not check the domains' certificates"),
    );
    this.running = false;
    await this.schedule();
  }

  /** Sets the timer for the next due certificate (after an issue moved a due time, too). */
  private async schedule(): Promise<void> {
    if (this.stopped || this.running) return;
    const due = this.deps.issuer
      ? (await this.deps.store.listDomains().catch(() => []))
          .filter((d) => d.source === "acme" && d.nextAttemptAt !== null)
          .map((d) => Math.max(Date.parse(d.nextAttemptAt ?? ""), this.acmePausedUntil))
      : [];
    const now = this.clock.now();
    const next = Math.min(now + this.maxWaitMs, ...due);
    if (this.stopped || this.running) return;
    this.timer?.cancel();
    this.timer = this.clock.setTimeout(() => void this.loop(), Math.max(1000, next - now));
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
  }
}
