// The nftables firewall (ADR 0019): the plan rendered as one table, checked by the real `nft` against the
// running kernel in check mode (`nft -c`: parsed and validated, nothing committed, so no rule of this host
// changes), and the argv it runs.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import type { ExecResult } from "../../../src/adapters/exec.js";
import { NftFirewall, renderNft, renderNftChange } from "../../../src/adapters/nft-isolation.js";
import { type IsolatedNetwork, planIsolation } from "../../../src/core/isolation.js";

const scope = `unit${randomBytes(4).toString("hex")}`;
const plan = planIsolation({
  scope,
  pool: "10.210.0.0/16",
  networks: [
    { name: "pier-a", subnets: ["10.210.0.0/26"] },
    { name: "pier-b-v6-1", subnets: ["10.210.0.64/26", "fd00:1::/64"] },
  ],
  allow: ["192.168.7.0/24"],
  hostPorts: [8000, 8443],
});

const check = (text: string) => spawnSync("nft", ["-c", "-f", "-"], { input: text, encoding: "utf8" });

describe("renderNft", () => {
  test("one inet table, replaced in one transaction, with base chains before the engine's filter", () => {
    const text = renderNft(plan);
    const lines = text.split("\n");
    assert.deepEqual(lines.slice(0, 3), [
      `table inet pier-${scope} {}`,
      `delete table inet pier-${scope}`,
      `table inet pier-${scope} {`,
    ]);
    assert.match(text, /type filter hook forward priority filter - 10; policy accept;/);
    assert.match(text, /type filter hook input priority filter - 10; policy accept;/);
    assert.match(
      text,
      /map out4 \{ type ipv4_addr : verdict; flags interval; elements = \{ 10\.210\.0\.0\/26 : jump pier-a-out, 10\.210\.0\.64\/26 : jump pier-b-v6-1-out \}; \}/,
    );
    assert.match(text, /map out6 \{ [^}]*elements = \{ fd00:1::\/64 : jump pier-b-v6-1-out \}/);
    assert.match(
      text,
      /chain pier-b-v6-1-out \{\n {4}ip daddr \{ 10\.210\.0\.64\/26 \} return\n {4}ip6 daddr \{ fd00:1::\/64 \} return\n {4}jump egress\n/,
    );
    assert.match(text, /tcp dport \{ 8000, 8443 \} return/);
    assert.match(text, /set allow4 \{ [^}]*elements = \{ 192\.168\.7\.0\/24 \}/);
  });

  test("the kernel accepts the table (nft -c)", () => {
    const r = check(renderNft(plan));
    assert.equal(r.status, 0, r.stderr);
  });

  test("with no network the table is deleted, and deleting a missing one is fine (nft -c)", () => {
    const empty = renderNft({ ...plan, networks: [] });
    assert.equal(empty, `table inet pier-${scope} {}\ndelete table inet pier-${scope}\n`);
    assert.equal(check(empty).status, 0);
  });

  test("a thousand networks: accepted by the kernel", () => {
    const networks = Array.from({ length: 1000 }, (_, i) => ({
      name: `pier-${i}`,
      subnets: [`10.210.${Math.floor(i / 4)}.${(i % 4) * 64}/26`],
    }));
    const big = planIsolation({ scope, pool: "10.210.0.0/16", networks, allow: [], hostPorts: [80, 443] });
    const r = check(renderNft(big));
    assert.equal(r.status, 0, r.stderr);
  });
});

const planOf = (networks: IsolatedNetwork[], table = scope) =>
  planIsolation({
    scope: table,
    pool: "10.210.0.0/16",
    networks,
    allow: ["192.168.7.0/24"],
    hostPorts: [8000],
  });
const A = { name: "pier-a", subnets: ["10.210.0.0/26"] };
const B = { name: "pier-b", subnets: ["10.210.0.64/26", "fd00:2::/64"] };
const C = { name: "pier-c", subnets: ["10.99.0.0/26"] };

describe("renderNftChange", () => {
  test("only what changed: a network added, one removed, one whose subnet changed", () => {
    const change = renderNftChange(planOf([A, B]), planOf([{ ...A, subnets: ["10.210.0.128/26"] }, C]));
    const t = `inet pier-${scope}`;
    assert.deepEqual(change?.trim().split("\n"), [
      `delete element ${t} out4 { 10.210.0.64/26 }`,
      `delete element ${t} in4 { 10.210.0.64/26 }`,
      `delete element ${t} sources4 { 10.210.0.64/26 }`,
      `delete element ${t} out6 { fd00:2::/64 }`,
      `delete element ${t} in6 { fd00:2::/64 }`,
      `delete element ${t} sources6 { fd00:2::/64 }`,
      `delete element ${t} out4 { 10.210.0.0/26 }`,
      `delete element ${t} in4 { 10.210.0.0/26 }`,
      `delete element ${t} sources4 { 10.210.0.0/26 }`,
      `delete element ${t} tenants6 { fd00:2::/64 }`,
      `delete chain ${t} pier-b-out`,
      `delete chain ${t} pier-b-in`,
      `flush chain ${t} pier-a-out`,
      `add rule ${t} pier-a-out ip daddr { 10.210.0.128/26 } return`,
      `add rule ${t} pier-a-out jump egress`,
      `flush chain ${t} pier-a-in`,
      `add rule ${t} pier-a-in ip saddr { 10.210.0.128/26 } return`,
      `add rule ${t} pier-a-in jump ingress`,
      `add element ${t} out4 { 10.210.0.128/26 : jump pier-a-out }`,
      `add element ${t} in4 { 10.210.0.128/26 : jump pier-a-in }`,
      `add element ${t} sources4 { 10.210.0.128/26 }`,
      `add chain ${t} pier-c-out`,
      `add rule ${t} pier-c-out ip daddr { 10.99.0.0/26 } return`,
      `add rule ${t} pier-c-out jump egress`,
      `add chain ${t} pier-c-in`,
      `add rule ${t} pier-c-in ip saddr { 10.99.0.0/26 } return`,
      `add rule ${t} pier-c-in jump ingress`,
      `add element ${t} out4 { 10.99.0.0/26 : jump pier-c-out }`,
      `add element ${t} in4 { 10.99.0.0/26 : jump pier-c-in }`,
      `add element ${t} sources4 { 10.99.0.0/26 }`,
      `add element ${t} tenants4 { 10.99.0.0/26 }`,
    ]);
  });

  test("the whole table when there is none yet, none is left, or the fixed parts differ; nothing when equal", () => {
    assert.equal(renderNftChange(planOf([]), planOf([A])), null);
    assert.equal(renderNftChange(planOf([A]), planOf([])), null);
    assert.equal(renderNftChange(planOf([A]), planOf([A], "other")), null);
    assert.equal(renderNftChange(planOf([A]), { ...planOf([A]), hostPorts: [80] }), null);
    assert.equal(renderNftChange(planOf([A, B]), planOf([A, B])), "");
  });
});

/** A table as the kernel holds it, without its name and handles, chains in a stable order, rules in theirs. */
function listed(table: string): string[] {
  const r = spawnSync("nft", ["-j", "list", "table", "inet", table], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const items = (JSON.parse(r.stdout) as { nftables: Record<string, Record<string, unknown>>[] }).nftables;
  const rows = items.flatMap((i) =>
    Object.entries(i)
      .filter(([kind]) => kind !== "table" && kind !== "metainfo")
      .map(([kind, v]) => {
        const body = Object.fromEntries(Object.entries(v).filter(([k]) => k !== "handle" && k !== "table"));
        return { key: `${kind} ${String(v.chain ?? v.name)}`, text: `${kind} ${JSON.stringify(body)}` };
      }),
  );
  // A stable sort: the rules of one chain keep their order.
  return rows.sort((a, b) => a.key.localeCompare(b.key)).map((x) => x.text);
}

describe("NftFirewall on the kernel (a table of this test's own, removed after)", () => {
  test("a change applied alone leaves the table the whole plan makes", async () => {
    const fw = new NftFirewall();
    const second = `${scope}b`;
    try {
      await fw.apply(planOf([A, B]));
      const next = planOf([
        { ...A, subnets: ["10.210.0.128/26"] },
        C,
        { name: "pier-d", subnets: ["fd00:4::/64"] },
      ]);
      await fw.apply(next);
      await new NftFirewall().apply(
        planOf(
          next.networks.map((n) => ({ name: n.network, subnets: [...n.v4, ...n.v6] })),
          second,
        ),
      );
      assert.deepEqual(listed(`pier-${scope}`), listed(`pier-${second}`));
      // Someone removed the table: the next change makes it whole again.
      spawnSync("nft", ["delete", "table", "inet", `pier-${scope}`]);
      await fw.apply(planOf([A]));
      assert.equal(spawnSync("nft", ["list", "table", "inet", `pier-${scope}`]).status, 0);
    } finally {
      spawnSync("nft", ["delete", "table", "inet", `pier-${scope}`]);
      spawnSync("nft", ["delete", "table", "inet", `pier-${second}`]);
    }
  });
});

describe("NftFirewall", () => {
  test("runs nft -f - with the script on stdin (argv, no shell)", async () => {
    const calls: { argv: readonly string[]; input: string }[] = [];
    const fw = new NftFirewall(async (argv, input): Promise<ExecResult> => {
      calls.push({ argv, input });
      return { stdout: "", stderr: "" };
    }, "/usr/sbin/nft");
    await fw.apply(plan);
    assert.deepEqual(calls, [{ argv: ["/usr/sbin/nft", "-f", "-"], input: renderNft(plan) }]);
  });
});
