import { PierError } from "../../core/errors.js";
import { reservedLabels } from "../../core/labels.js";
import { dockerSettings, planDockerBuild } from "../../core/plan-docker.js";
import type { ReleaseImages } from "../../core/ports.js";
import { type BuildContext, type RunSettings, type Runtime, readInside } from "./runtime.js";

/** The Dockerfile runtime: contract section 2.4 and the Install/Login, Build, Run phases of section 3. */
export class DockerRuntime implements Runtime {
  constructor(
    private readonly engine: ReleaseImages,
    /** PIER_BUILD_NETWORK: the network RUN steps use (classic builder), or null. */
    private readonly buildNetwork: string | null = null,
  ) {}

  settings(vars: Record<string, string>): {
    settings: RunSettings & { dockerfile: string };
    errors: string[];
  } {
    const r = dockerSettings(vars);
    return {
      settings: {
        httpPort: r.settings.httpPort,
        tcpPort: r.settings.tcpPort,
        ipv6Subnet: r.settings.ipv6Subnet,
        mountDockerSocket: r.settings.mountDockerSocket,
        cmd: null,
        dockerfile: r.settings.dockerfile,
      },
      errors: r.errors,
    };
  }

  async build(ctx: BuildContext): Promise<string> {
    const { app, deployment: d } = ctx;
    const settings = dockerSettings(ctx.vars).settings;
    const dockerfileText = await readInside(ctx.sourceDir, settings.dockerfile);
    const planned = planDockerBuild({
      appId: app.id,
      deploymentId: d.id,
      buildFlavor: app.buildFlavor,
      vars: ctx.vars,
      platformVars: ctx.platformVars,
      dockerfileText,
      withoutCache: d.withoutCache,
      settings,
    });
    if (!planned.ok) throw new PierError("BUILD_FAILED", planned.errors.join(" "));
    const plan = planned.plan;
    for (const l of plan.logLines) ctx.write(l);
    ctx.write(
      `Building ${plan.image} (build flavor ${app.buildFlavor}, ${Math.round(plan.memoryBytes / 2 ** 20)} MiB)...`,
    );
    await this.engine.buildImage(
      {
        contextDir: ctx.sourceDir,
        dockerfile: plan.dockerfile,
        tag: plan.image,
        buildArgs: plan.buildArgs,
        labels: plan.labels,
        flavor: app.buildFlavor,
        memoryBytes: plan.memoryBytes,
        noCache: plan.noCache,
        network: this.buildNetwork ?? ctx.addonNetwork ?? null,
        buildkit: plan.buildkit,
        login: plan.login,
      },
      ctx.write,
      ctx.signal,
    );
    const reserved = reservedLabels((await this.engine.imageInfo(plan.image))?.labels ?? {});
    if (reserved.length > 0)
      throw new PierError(
        "BUILD_FAILED",
        `The image sets ${reserved.join(", ")}: labels under pier. are Pier's own (it routes and isolates apps by them).`,
        "Remove those LABEL lines from the Dockerfile or its base image, then push again.",
      );
    ctx.write(`Built ${plan.image}.`);
    return plan.image;
  }
}
