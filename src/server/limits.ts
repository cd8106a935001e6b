import { MAX_VALUE_BYTES } from "../core/env.js";
import { ENV_CAP_HINT, envBytes, envCapProblem, MAX_ENV_BYTES, MAX_VARIABLES } from "../core/env-limits.js";
import { PierError } from "../core/errors.js";
import {
  breachHint,
  type Ceiling,
  type CeilingOverrides,
  ceilingBreach,
  effectiveCeiling,
  memoryOf,
  type Size,
} from "../core/limits.js";
import type { App } from "../core/model.js";
import type { Store } from "../core/ports.js";

/** What `GET /v1/apps/:app/limits` answers (and `pier limits` prints). */
export interface LimitsView {
  app: string;
  /** The ceiling in force: the admin's for this app, else the server's default. */
  limits: Ceiling;
  /** What an admin set for this app; null: the server's default applies. */
  set: CeilingOverrides;
  defaults: Ceiling;
  /** The app's size now. */
  used: { flavor: App["flavor"]; instances: number; memoryMiB: number };
  /** The caps on variables, the same for every app, and the app's own variables now. */
  variables: {
    maxCount: number;
    maxValueBytes: number;
    maxTotalBytes: number;
    count: number;
    totalBytes: number;
  };
}

/** An app's ceiling (ADR 0022): read, set by an admin, and checked before a size or a variable changes. */
export class AppLimits {
  constructor(private readonly deps: { store: Store; defaults: Ceiling }) {}

  /** The server's default ceiling (PIER_APP_MAX_*, else the host's). */
  get defaults(): Ceiling {
    return this.deps.defaults;
  }

  async ceiling(appId: string): Promise<Ceiling> {
    return effectiveCeiling(this.deps.defaults, await this.deps.store.appLimits(appId));
  }

  /** Throws LIMIT_EXCEEDED, naming the limit, its value and who raises it, unless `size` fits. */
  async check(app: Pick<App, "id" | "name">, size: Size): Promise<void> {
    this.checkAgainst(await this.ceiling(app.id), app.name, size);
  }

  /** The same, for an app not stored yet: its ceiling is the server's default, raised once it exists. */
  checkNew(name: string, size: Size): void {
    const b = ceilingBreach(size, this.deps.defaults, name);
    if (b)
      throw new PierError(
        "LIMIT_EXCEEDED",
        b.message,
        `Create it within the server's defaults (PIER_APP_MAX_*), then an admin raises its limit (pier limits set ${b.flag} --app ${name}) and scales it.`,
      );
  }

  private checkAgainst(ceiling: Ceiling, name: string, size: Size): void {
    const b = ceilingBreach(size, ceiling, name);
    if (b) throw new PierError("LIMIT_EXCEEDED", b.message, breachHint(b, name));
  }

  /** The `accept` of Store.changeEnv: throws ENV_LIMIT_EXCEEDED if the app's variables pass a cap. */
  envCheck(app: Pick<App, "name">): (next: Record<string, string>) => void {
    return (next) => {
      const problem = envCapProblem(next, app.name);
      if (problem) throw new PierError("ENV_LIMIT_EXCEEDED", problem, ENV_CAP_HINT);
    };
  }

  async view(app: App): Promise<LimitsView> {
    const set = await this.deps.store.appLimits(app.id);
    const vars = await this.deps.store.getEnv(app.id);
    return {
      app: app.name,
      limits: effectiveCeiling(this.deps.defaults, set),
      set,
      defaults: this.deps.defaults,
      used: { flavor: app.flavor, instances: app.instances, memoryMiB: memoryOf(app) },
      variables: {
        maxCount: MAX_VARIABLES,
        maxValueBytes: MAX_VALUE_BYTES,
        maxTotalBytes: MAX_ENV_BYTES,
        count: Object.keys(vars).length,
        totalBytes: envBytes(vars),
      },
    };
  }

  /** An admin sets some of the app's ceiling; null puts one back to the server's default. */
  async set(app: App, patch: Partial<CeilingOverrides>): Promise<LimitsView> {
    await this.deps.store.setAppLimits(app.id, patch);
    return this.view(app);
  }
}
