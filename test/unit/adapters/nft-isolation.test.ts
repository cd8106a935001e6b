// The nftables firewall (ADR 0019): the plan rendered as one table, checked by the real `nft` against the
// running kernel in check mode (`nft -c`: parsed and validated, nothing committed, so no rule of this host
// changes), and the argv it runs.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import type { ExecResult } from "../../../src/adapters/exec.js";
import { NftFirewall, renderNft } from "../../../src/adapters/nft-isolation.js";
import { planIsolation } from "../../../src/core/isolation.js";

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
      /map out4 \{ type ipv4_addr : verdict; flags interval; elements = \{ 10\.210\.0\.0\/26 : jump net0-out, 10\.210\.0\.64\/26 : jump net1-out \}; \}/,
    );
    assert.match(text, /map out6 \{ [^}]*elements = \{ fd00:1::\/64 : jump net1-out \}/);
    assert.match(
      text,
      /chain net1-out \{\n {4}ip daddr \{ 10\.210\.0\.64\/26 \} return\n {4}ip6 daddr \{ fd00:1::\/64 \} return\n {4}jump egress\n/,
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
