import { z } from "zod";
import { movedSentence } from "../../core/nodes.js";
import { APP, checkFlags, FORMAT, HELP, humanJson, parseFlags, takePositionals } from "../args.js";
import type { Command } from "../command.js";
import { resolveApp } from "../link-file.js";
import { json, table } from "../output.js";

export const status: Command = {
  name: "status",
  summary: "Show an app's state, release, deployment and instances",
  help: `Usage: pier status [--app <name|id>] [--format human|json]

Shows the app's state, its running release, its latest deployment, its custom domains with their
certificates' state, and every instance.

Options:
  -a, --app <name|id>       the app (default: the one in .pier.json, searched upwards from here)
      --format human|json   output format (default human; json prints the API's status object)
  -h, --help                show this help
`,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("status", args, { ...HELP, ...APP, ...FORMAT });
    takePositionals("status", positionals, 0, 0, "");
    const { format } = checkFlags("status", z.object({ format: humanJson }), values);
    const app = resolveApp(values.app, ctx.cwd, "status");

    const s = await ctx.client().call("GET /v1/apps/:app/status", { params: { app: app.ref } });
    if (format === "json") {
      ctx.out(json(s));
      return 0;
    }
    const release = s.release
      ? s.release.number !== undefined
        ? `v${s.release.number}`
        : (s.release.id ?? "yes")
      : "none yet";
    const d = s.deployment;
    let text = `App:         ${s.app.name} (${s.app.id})\n`;
    text += `State:       ${s.state}${s.app.stopped ? " (stopped)" : ""}\n`;
    text += `Size:        ${s.app.instances} × ${s.app.flavor}, builds on ${s.app.buildFlavor}\n`;
    text += `Release:     ${release}\n`;
    text += `Deployment:  ${d ? `${d.id} ${d.state}${d.reason ? `: ${d.reason}` : ""} (${d.cause})` : "none yet"}\n`;
    if (s.app.url) text += `URL:         ${s.app.url}\n`;
    if (s.tcp) text += `TCP:         ${s.tcp.host}:${s.tcp.port}\n`;
    if (s.routeProblem) text += `Route:       not served by the edge: ${s.routeProblem}\n`;
    for (const [i, d] of (s.domains ?? []).entries()) {
      const cert =
        d.state === "issued"
          ? `certificate from ${d.issuer ?? "?"} (${d.source}), expires ${(d.notAfter ?? "").slice(0, 10)}`
          : d.state === "pending"
            ? "obtaining a certificate"
            : `no certificate${d.lastError ? `: ${d.lastError}` : ""}`;
      text += `${i === 0 ? "Domains:    " : "            "} ${d.name}: ${cert}\n`;
    }
    if (s.instances.length === 0) {
      text += "Instances:   none running\n";
    } else {
      // A NODE column on a swarm only (instances have a node there); nothing new on one dockerd.
      const nodes = s.instances.some((i) => i.node);
      text += "\n";
      text += table(
        [
          "INSTANCE",
          "ID",
          "STATE",
          "STARTED",
          "RESTARTS",
          "LAST EXIT",
          "ADDRESS",
          ...(nodes ? ["NODE"] : []),
        ],
        s.instances.map((i) => [
          String(i.number),
          i.id,
          i.state,
          i.startedAt ?? "",
          String(i.restarts),
          i.lastExit ? `${i.lastExit.code ?? "signal"} at ${i.lastExit.at}` : "",
          i.address ?? "",
          ...(nodes ? [i.node ?? ""] : []),
        ]),
      );
      for (const i of s.instances) {
        const moved = movedSentence(i);
        if (moved) text += `${moved}\n`;
      }
    }
    ctx.out(text);
    return 0;
  },
};
