import type { ApiDeps } from "./routes/deps.js";
import type { SomeHandlers } from "./routes/mount.js";

/** The swarm's nodes (ADR 0030). */
export function nodeHandlers(deps: Pick<ApiDeps, "nodes">) {
  return {
    "GET /v1/nodes": async (c) => c.json(await deps.nodes.list()),
    "POST /v1/nodes/join-command": async (c, req) => {
      const { role } = await req.body();
      return c.json(await deps.nodes.joinCommand(role));
    },
    "POST /v1/nodes/:node/drain": async (c) => c.json(await deps.nodes.drain(c.req.param("node") ?? "")),
    "POST /v1/nodes/:node/activate": async (c) =>
      c.json(await deps.nodes.activate(c.req.param("node") ?? "")),
  } satisfies SomeHandlers;
}
