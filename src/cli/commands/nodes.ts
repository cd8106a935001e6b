import { z } from "zod";
import { oneManagerNote } from "../../core/nodes.js";
import { checkFlags, FORMAT, HELP, humanJson, parseFlags, subcommand, takePositionals } from "../args.js";
import type { Command, Context } from "../command.js";
import { json, table } from "../output.js";
import type { CliReplyOf } from "../schemas.js";

type NodeView = CliReplyOf<"POST /v1/nodes/:node/drain">;

const USAGE = `Usage: pier nodes [--format human|json]
       pier nodes join-command [--manager] [--format human|json]
       pier nodes drain NAME
       pier nodes activate NAME

  The machines of the swarm Pier runs on (pier server with PIER_ENGINE=swarm on a swarm manager; on one
  dockerd there are none). Admin tokens only.

  (none)        every node: name, address, role, availability, state, whether the node guard
                runs there with pier server's rules (yes, no, off: PIER_ISOLATION=off; why not on
                stderr, and in the JSON's guardProblem), how many of Pier's instances run there, labels
  join-command  what a new machine runs to join the swarm (a worker; --manager: a manager). The token
                in it lets a machine into the swarm: keep it secret
  drain         moves a node's work to the other nodes (refused for the last active, ready node)
  activate      lets a drained node take work again; the apps whose instances crowd the other
                nodes are redeployed, one after the other, to spread onto it (named on stderr;
                a node that comes back after a loss gets the same 10 s after it is ready)

Options:
      --manager                the join command of a manager (join-command)
      --format human|json      output format (default human)
  -h, --help                   show this help
`;

const labels = (l: Record<string, string>) =>
  Object.entries(l)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");

function describeNode(n: NodeView): string {
  return `${n.name} (${n.address}): ${n.role}${n.leader ? ", leader" : ""}, ${n.availability}, ${n.state}`;
}

interface Sub {
  ctx: Context;
  rest: string[];
  format: "human" | "json";
  manager: boolean;
}

async function list({ ctx, rest, format }: Sub): Promise<number> {
  takePositionals("nodes", rest, 0, 0, "");
  const all = await ctx.client().call("GET /v1/nodes");
  if (format === "json") {
    ctx.out(json(all));
    return 0;
  }
  ctx.out(
    table(
      ["NAME", "ADDRESS", "ROLE", "AVAILABILITY", "STATE", "GUARDED", "INSTANCES", "LABELS"],
      all.map((n) => [
        n.name,
        n.address,
        n.leader ? `${n.role} (leader)` : n.role,
        n.availability,
        n.state,
        n.guarded,
        String(n.instances),
        labels(n.labels),
      ]),
    ),
  );
  // Why a node is not guarded: a warning, beside the data.
  for (const n of all)
    if (n.guardProblem)
      ctx.err(
        n.guarded === "unknown"
          ? `whether ${n.name} is guarded is unknown: ${n.guardProblem}\n`
          : `${n.name} is not guarded: ${n.guardProblem}\n`,
      );
  const managers = oneManagerNote(all);
  if (managers) ctx.err(`${managers}\n`);
  return 0;
}

async function joinCommand({ ctx, rest, format, manager }: Sub): Promise<number> {
  takePositionals("nodes", rest, 0, 0, "");
  const j = await ctx.client().call("POST /v1/nodes/join-command", {
    body: { role: manager ? "manager" : "worker" },
  });
  if (format === "json") {
    ctx.out(json(j));
    return 0;
  }
  ctx.err(`On the new machine (Debian's docker.io, dockerd running), to join as a ${j.role}:\n`);
  ctx.out(`${j.command}\n`);
  if (j.registry?.trust) {
    ctx.err("Then, on that machine, trust Pier's registry (the nodes pull release images from it):\n");
    ctx.out(j.registry.trust);
  }
  ctx.err("Keep the token secret: it lets a machine into the swarm. Check with: pier nodes\n");
  return 0;
}

async function drain({ ctx, rest, format }: Sub): Promise<number> {
  const [name] = takePositionals("nodes", rest, 1, 1, "the node NAME: pier nodes drain node2");
  const n = await ctx.client().call("POST /v1/nodes/:node/drain", { params: { node: name as string } });
  ctx.out(format === "json" ? json(n) : `Drained ${describeNode(n)}.\n`);
  return 0;
}

async function activate({ ctx, rest, format }: Sub): Promise<number> {
  const [name] = takePositionals("nodes", rest, 1, 1, "the node NAME: pier nodes activate node2");
  const n = await ctx.client().call("POST /v1/nodes/:node/activate", { params: { node: name as string } });
  if (format === "json") {
    ctx.out(json(n));
    return 0;
  }
  ctx.out(`Activated ${describeNode(n)}.\n`);
  if (n.rebalancing.length > 0)
    ctx.err(
      `Spreading apps onto ${n.name}, a few at a time (PIER_REBALANCE_AT_ONCE; each a redeploy of its current release, "rebalance" in pier deployments, chosen again just before it runs); planned now: ${n.rebalancing.join(", ")}\n`,
    );
  return 0;
}

const SUBCOMMANDS: Record<string, (sub: Sub) => Promise<number>> = {
  list,
  "join-command": joinCommand,
  drain,
  activate,
};

export const nodes: Command = {
  name: "nodes",
  summary: "The swarm's machines: list, join-command, drain, activate",
  help: USAGE,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("nodes", args, {
      ...HELP,
      ...FORMAT,
      manager: { type: "boolean" },
    });
    const [sub = "list", ...rest] = positionals;
    const { format } = checkFlags(`nodes ${sub}`, z.object({ format: humanJson }), { format: values.format });
    const handler = subcommand("nodes", SUBCOMMANDS, sub, "join-command, drain, activate");
    return handler({ ctx, rest, format, manager: values.manager === true });
  },
};
