// The subnet pool's unreachable route (ADR 0016): added when the host has no route for the pool's range,
// kept when one of ours is there, left alone when the host routes that range elsewhere, and reported
// (never thrown) when it cannot be added.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ExecError, type ExecResult } from "../../../src/adapters/exec.js";
import { claimPoolRoute, closePoolByRules } from "../../../src/adapters/pool-route.js";

/** A fake `ip`: what `route show match` prints, and whether `route add` fails. */
function fakeIp(shown: string, addFails?: string) {
  const calls: string[] = [];
  const run = async (argv: readonly string[]): Promise<ExecResult> => {
    calls.push(argv.join(" "));
    if (argv.includes("show")) return { stdout: shown, stderr: "" };
    if (addFails) throw new ExecError(argv, 2, addFails);
    return { stdout: "", stderr: "" };
  };
  return { calls, run };
}

describe("claimPoolRoute", () => {
  const cases: {
    name: string;
    shown: string;
    addFails?: string;
    state: string;
    added: boolean;
    reason?: RegExp;
  }[] = [
    {
      name: "no route for the pool: added",
      shown: "default via 192.0.2.1 dev eth0 \n",
      state: "added",
      added: true,
    },
    {
      name: "ours already (another Pier, an earlier start)",
      shown: "unreachable 10.210.0.0/16 \n",
      state: "present",
      added: false,
    },
    {
      name: "the host routes that range (a VPN): left alone",
      shown: "10.210.0.0/16 via 192.168.1.1 dev tun0 \n",
      state: "failed",
      added: false,
      reason: /the host routes 10.210.0.0\/16 already: 10.210.0.0\/16 via 192.168.1.1 dev tun0/,
    },
    {
      name: "the host routes a wider range (10.0.0.0/8 on a VPN): left alone",
      shown: "default via 192.0.2.1 dev eth0 \n10.0.0.0/8 dev tun0 scope link \n",
      state: "failed",
      added: false,
      reason: /the host routes 10.210.0.0\/16 already: 10.0.0.0\/8 dev tun0 scope link/,
    },
    {
      name: "not allowed (not root): reported",
      shown: "",
      addFails: "RTNETLINK answers: Operation not permitted",
      state: "failed",
      added: true,
      reason: /Operation not permitted/,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const ip = fakeIp(c.shown, c.addFails);
      const got = await claimPoolRoute("10.210.0.0/16", ip.run);
      assert.equal(got.state, c.state);
      if (c.reason) assert.match((got as { reason: string }).reason, c.reason);
      assert.equal(ip.calls[0], "ip -4 route show match 10.210.0.0/16");
      assert.equal(ip.calls.includes("ip -4 route add unreachable 10.210.0.0/16"), c.added);
    });
  }

  it("no `ip` on the host: reported, not thrown", async () => {
    const got = await claimPoolRoute("10.210.0.0/16", async () => {
      throw Object.assign(new Error("spawn ip ENOENT"), { code: "ENOENT" });
    });
    assert.deepEqual(got, { state: "failed", reason: "spawn ip ENOENT" });
  });
});

describe("closePoolByRules (the edge's sandbox on a swarm)", () => {
  const RULE_MAIN = "100:\tfrom all to 10.210.0.0/16 lookup main suppress_prefixlength 0\n";
  const RULE_UNREACHABLE = "101:\tfrom all to 10.210.0.0/16 unreachable\n";
  const BASE = "0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n";

  it("a new namespace: both rules added, the joined networks' routes first, then unreachable", async () => {
    const ip = fakeIp(BASE);
    assert.deepEqual(await closePoolByRules("10.210.0.0/16", ip.run), { state: "added" });
    assert.deepEqual(ip.calls, [
      "ip -4 rule show",
      "ip -4 rule add to 10.210.0.0/16 lookup main suppress_prefixlength 0 priority 100",
      "ip -4 rule add to 10.210.0.0/16 unreachable priority 101",
    ]);
  });

  it("a namespace Pier closed before (pier server started again): nothing added twice", async () => {
    const ip = fakeIp(
      `0:\tfrom all lookup local\n${RULE_MAIN}${RULE_UNREACHABLE}32766:\tfrom all lookup main\n`,
    );
    assert.deepEqual(await closePoolByRules("10.210.0.0/16", ip.run), { state: "present" });
    assert.deepEqual(ip.calls, ["ip -4 rule show"]);
  });

  it("one rule left: only the other added; a refusal is reported, not thrown", async () => {
    const ip = fakeIp(`${BASE}${RULE_MAIN}`);
    assert.deepEqual(await closePoolByRules("10.210.0.0/16", ip.run), { state: "added" });
    assert.deepEqual(ip.calls.slice(1), ["ip -4 rule add to 10.210.0.0/16 unreachable priority 101"]);
    const refused = fakeIp(BASE, "RTNETLINK answers: Operation not permitted");
    const got = await closePoolByRules("10.210.0.0/16", refused.run);
    assert.equal(got.state, "failed");
    assert.match((got as { reason: string }).reason, /Operation not permitted/);
  });
});
