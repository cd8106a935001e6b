// What a user sees of an app on the swarm (issue 18, ADR 0030): `pier status` names each instance's node,
// `pier nodes` counts Pier's instances on each; an instance that exits on its node is seen by Pier (its exit
// recorded from the swarm's task list); a worker lost, its instance runs on another node, `pier status` says
// which and why (so does the console's Logs page, in Chromium: its Node column and the move's sentence), and
// the edge follows it to its new address; the node back, that line goes (the loss stays as the last exit).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { browserNetns } from "../e2e/browser-netns.js";
import { adminToken, signIn } from "../e2e/console-page.js";
import { NODE_DOCKER_APP, type Pier } from "../e2e/harness.js";
import { type LabInfo, lab, swarmPier, swarmPierDown, swarmSettings, until } from "./lab.js";

interface StatusInstance {
  number: number;
  id: string;
  state: string;
  restarts: number;
  lastExit: { code: number; at: string } | null;
  address: string | null;
  node?: string;
  moved?: { from: string; reason: string; at: string | null };
}

describe("pier status and pier nodes on the swarm", { timeout: 1_200_000 }, () => {
  let info: LabInfo;
  let pier: Pier;
  let firstPush: { id: string; stderr: string };

  const instances = async () =>
    (await pier.cliJson<{ instances: StatusInstance[] }>(["status", "--app", "web"])).instances;
  const running = async (n: number) =>
    until(`${n} running instances`, 120, async () => {
      const list = await instances();
      return list.length === n && list.every((i) => i.state === "running" && i.node) ? list : undefined;
    });

  before(async () => {
    ({ info, pier } = await swarmPier({
      images: ["pier/base:bookworm", "pier/node:22", "pier/addon-kv:8"],
      // The rebalancer's looks are info lines: a failed spread says what it saw (the last test).
      settings: (l) => ({ ...swarmSettings(l), PIER_LOG_LEVEL: "info" }),
    }));
    const web = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "web"]);
    assert.equal((await pier.cli(["env", "set", "CC_HEALTH_CHECK_PATH", "/health", "--app", "web"])).code, 0);
    const hook = 'echo "hook sees $APP_ID greeting=$GREETING on $(hostname)"';
    assert.equal((await pier.cli(["env", "set", "CC_RUN_SUCCEEDED_HOOK", hook, "--app", "web"])).code, 0);
    const push = await pier.push(await pier.repo("web", NODE_DOCKER_APP, web.id));
    assert.equal(push.code, 0, push.stderr);
    firstPush = { id: web.id, stderr: push.stderr };
    const scaled = await pier.cli(["scale", "--instances", "3", "--app", "web"]);
    assert.equal(scaled.code, 0, scaled.stderr);
  });
  after(() => swarmPierDown(pier));

  /**
   * The console's Logs page of web in Chromium (signed in with the admin token): the Instances table's
   * rows and the text under it, once `ready` holds for the page's text.
   */
  const consoleLogsPage = async (ready: RegExp) => {
    const netns = await browserNetns([pier.apiPort]);
    const browser = await chromium.launch({ executablePath: netns.executablePath, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(30_000);
      const base = `http://127.0.0.1:${pier.apiPort}/`;
      await signIn(page, base, adminToken(pier));
      await page.goto(`${base}#/apps/web/logs`);
      const table = page.getByTestId("instances");
      await table.locator("tbody tr").first().waitFor();
      await page.waitForFunction((re) => new RegExp(re).test(document.body.textContent ?? ""), ready.source);
      return {
        header: await table.locator("thead th").allTextContents(),
        rows: await table
          .locator("tbody tr")
          .evaluateAll((trs) =>
            trs.map((tr) => [...(tr as HTMLTableRowElement).cells].map((c) => c.textContent ?? "")),
          ),
        text: (await page.locator("body").textContent()) ?? "",
      };
    } finally {
      await browser.close();
      await netns.close();
    }
  };

  test("pier status names each instance's node; pier nodes counts them per node", async () => {
    const list = await running(3);
    const names = new Set(info.nodes.map((n) => n.name));
    for (const i of list) assert.ok(names.has(i.node ?? ""), JSON.stringify(i));
    const human = await pier.cli(["status", "--app", "web"]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /INSTANCE\s+ID\s+STATE.*ADDRESS\s+NODE/);
    for (const i of list) assert.match(human.stdout, new RegExp(`^${i.number}\\s.*\\s${i.node}\\s*$`, "m"));

    // Every running instance of Pier counts (the previous release's, until it has stopped, too).
    const want = new Map<string, number>();
    for (const i of list) want.set(i.node ?? "", (want.get(i.node ?? "") ?? 0) + 1);
    const expected = JSON.stringify(info.nodes.map((n) => [n.name, want.get(n.name) ?? 0]).sort());
    await until(`pier nodes counting ${expected}`, 60, async () => {
      const nodes = await pier.cliJson<{ name: string; instances: number }[]>(["nodes"]);
      return JSON.stringify(nodes.map((n) => [n.name, n.instances]).sort()) === expected ? true : undefined;
    });
    const table = await pier.cli(["nodes"]);
    assert.match(table.stdout, /NAME\s+ADDRESS\s+ROLE\s+AVAILABILITY\s+STATE\s+GUARDED\s+INSTANCES/);
    // This Pier runs with isolation off: no node is guarded, and each says so.
    const rows = table.stdout.split("\n").filter((l) => /^node\d/.test(l));
    assert.equal(rows.length, 3, table.stdout);
    for (const row of rows) assert.match(row, /\sready\s+off\s+\d+\s/, row);
  });

  test("a run hook runs like instance 0 wherever it is (its image and variables), its output in the deploy log", () => {
    assert.match(firstPush.stderr, /remote: -----> Running CC_RUN_SUCCEEDED_HOOK like instance 0/);
    assert.match(firstPush.stderr, new RegExp(`remote: hook sees ${firstPush.id} greeting=hello on \\S+`));
    assert.match(firstPush.stderr, /remote: CC_RUN_SUCCEEDED_HOOK exited with code 0\./);
  });

  test("a task app runs once to completion on the swarm: its variables, its output and its exit code", async () => {
    const cmd = 'echo "task sees $APP_ID greeting=$GREETING"; node -e "process.exit(0)"';
    const job = await pier.cliJson<{ id: string }>(["create", "--type", "docker", "--task", cmd, "job"]);
    const push = await pier.push(await pier.repo("job", NODE_DOCKER_APP, job.id));
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /remote: Task started/);
    assert.match(push.stderr, new RegExp(`remote: task sees ${job.id} greeting=hello`));
    assert.match(push.stderr, /remote: Task finished with exit code 0\./);
  });

  test("a task app on the swarm reaches its linked add-on by its address and password", async () => {
    // A kv PING over the add-on's address and password from the linked variables (node is in the image); no
    // backslash in it: the task's command is the user's shell line, whose escapes a shell may read.
    const ping = [
      "const nl = String.fromCharCode(13, 10);",
      'const s = require("net").connect({ host: process.env.KV_HOST, port: Number(process.env.KV_PORT) });',
      's.on("error", (e) => { console.log("kv error " + e.code); process.exit(1); });',
      's.on("connect", () => s.write("AUTH " + process.env.KV_TOKEN + nl + "PING" + nl));',
      'let b = ""; s.on("data", (d) => { b += d; if (b.includes("PONG")) { console.log("kv says PONG"); process.exit(0); } });',
      'setTimeout(() => { console.log("kv timeout " + JSON.stringify(b)); process.exit(1); }, 5000);',
    ].join(" ");
    const job = await pier.cliJson<{ id: string }>([
      "create",
      "--type",
      "docker",
      "--task",
      `node -e '${ping}'`,
      "kvjob",
    ]);
    const made = await pier.cli(["addon", "create", "kv", "cache", "--link", "kvjob"]);
    assert.equal(made.code, 0, made.stderr);
    const push = await pier.push(await pier.repo("kvjob", NODE_DOCKER_APP, job.id));
    assert.match(push.stderr, /remote: kv says PONG/);
    assert.equal(push.code, 0, push.stderr);
  });

  test("an instance that exits on its node is seen: its exit code in pier status, and it runs again", async () => {
    const r = await pier.get("web", "/crash");
    assert.equal(r.status, 200, r.body);
    const crashed = await until("an instance with its exit 3 recorded, running again", 60, async () => {
      const list = await instances();
      const i = list.find((x) => x.lastExit?.code === 3);
      return i && i.state === "running" && i.restarts >= 1 ? i : undefined;
    });
    assert.ok(crashed.node, JSON.stringify(crashed));
  });

  test("a worker lost: its instance runs on another node, pier status says why, the edge follows", async () => {
    const list = await running(3);
    const victim = list.find((i) => i.node !== "node1");
    assert.ok(victim, `an instance on a worker: ${JSON.stringify(list)}`);
    const lost = victim.node ?? "";
    let started = false;
    await lab("kill", lost);
    try {
      const moved = await until(`instance ${victim.number} placed again off ${lost}`, 90, async () => {
        const i = (await instances()).find((x) => x.number === victim.number);
        return i?.state === "running" && i.node !== lost && i.moved ? i : undefined;
      });
      assert.deepEqual(moved.moved && [moved.moved.from, moved.moved.reason], [lost, `${lost} down`]);
      assert.equal(moved.lastExit?.code, -1, "the loss is recorded as an exit without a code");
      const human = await pier.cli(["status", "--app", "web"]);
      assert.match(
        human.stdout,
        new RegExp(`Instance ${victim.number} moved from ${lost} to ${moved.node} .*: ${lost} down`),
      );
      // The edge routes to the new task's address: every request answers again (within 30 s of the move).
      await until("20 requests in a row answered 200 through the edge", 30, async () => {
        for (let n = 0; n < 20; n++) if ((await pier.get("web", "/health")).status !== 200) return undefined;
        return true;
      });
      const nodes = await pier.cliJson<{ name: string; instances: number }[]>(["nodes"]);
      assert.equal(nodes.find((n) => n.name === lost)?.instances, 0, JSON.stringify(nodes));
      // The console's Logs page says the same: each instance's node, and the move under the table.
      const sentence = new RegExp(
        `Instance ${victim.number} moved from ${lost} to ${moved.node} .*: ${lost} down`,
      );
      const page = await consoleLogsPage(sentence);
      assert.equal(page.header.at(-1), "Node", page.header.join(" "));
      const row = page.rows.find((cells) => cells[0] === String(victim.number));
      assert.equal(row?.at(-1), moved.node, JSON.stringify(page.rows));
      assert.match(page.text, sentence);
      // Its lines from the lost node cannot be read while that node is down: pier logs says so, as Pier's
      // line on stderr (the swarm's note came as a log frame of its own, once shown as the app's output).
      const logs = await pier.cliJson<{ at: string; stream: string; line: string }[]>([
        "logs",
        "--app",
        "web",
      ]);
      const note = logs.find((l) => l.line.startsWith("pier: "));
      assert.equal(
        note?.line,
        `pier: some of this instance's log could not be read (${lost} is not available)`,
      );
      assert.equal(note?.stream, "stderr");
      assert.ok(
        logs.every((l) => !Number.isNaN(Date.parse(l.at))),
        `every line is timed: ${JSON.stringify(logs.filter((l) => Number.isNaN(Date.parse(l.at))))}`,
      );
      await lab("start", lost);
      started = true;
      // The node back: Pier spreads the instances onto it again (a redeploy of the current release, 10 s
      // after the node is ready: rebalancer.ts), and no instance is told moved any more.
      // What was seen last goes into a failure: the last deployment, and where the instances ran.
      let seen = "";
      await until(`${lost} back, the instances spread over it by a rebalance`, 180, async () => {
        const [d] = await pier.cliJson<{ cause: string; state: string }[]>(["deployments", "--app", "web"]);
        const list = await instances();
        seen = JSON.stringify({ deployment: d, instances: list.map((i) => [i.number, i.state, i.node]) });
        return d?.cause === `rebalance: ${lost} takes work again` &&
          d.state === "succeeded" &&
          list.filter((i) => i.state === "running").length === 3 &&
          list.some((i) => i.node === lost)
          ? true
          : undefined;
      }).catch((err: Error) => {
        const looks = pier.output.split("\n").filter((l) => l.includes('"part":"rebalancer"'));
        throw new Error(`${err.message}; seen last: ${seen}; the rebalancer's lines:\n${looks.join("\n")}`);
      });
      assert.doesNotMatch((await pier.cli(["status", "--app", "web"])).stdout, / moved from /);
    } finally {
      if (!started) await lab("start", lost);
    }
  });
});
