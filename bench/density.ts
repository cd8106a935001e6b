// bench/density: creates and deploys N small apps (a Dockerfile app and a Node.js app, alternating) on one
// `pier server`, then prints, against the targets of issue 7: every app answering through the edge; the
// server's RSS; the memory the machine spends per idle app beyond the apps' own processes (containerd shims,
// docker-proxy processes, sandboxes and the engine's init in each container, as PSS); the median deploy
// time of the last 10 apps over the first 10; and the time from `pier server` start to every route served
// again (HAProxy killed too). It deletes every app at the end.
// Run: npm run build && node dist/bench/density.js [N]
import { readFileSync } from "node:fs";
import { httpGet, NODE_DOCKER_APP, Pier, run, scopeOf } from "../test/e2e/harness.js";
import { countPassing, median, sleep, TINY_NODE_APP } from "./common.js";
import { type Proc, processes, pssKb, rssKb } from "./procs.js";

const N = Number(process.argv[2] ?? 100);
if (!Number.isInteger(N) || N < 2) throw new Error(`N must be an integer >= 2, not ${process.argv[2]}`);
const DOCKER = "/usr/bin/docker";

const mib = (kb: number) => `${(kb / 1024).toFixed(1)} MiB`;

async function ok(pier: Pier, name: string): Promise<boolean> {
  try {
    return (await httpGet(pier.httpPort, `${name}.localhost`, "/", 3000)).status === 200;
  } catch {
    return false;
  }
}

async function until200(pier: Pier, name: string, limitMs: number): Promise<void> {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    if (await ok(pier, name)) return;
    await sleep(20);
  }
  throw new Error(`${name} did not answer 200 through the edge within ${limitMs / 1000} s`);
}

/** How many of the apps answer 200 through the edge. */
const answering = (pier: Pier, names: readonly string[]) => countPassing(names, (a) => ok(pier, a));

/** The engine's per-container overhead of this Pier's apps, as PSS, by kind. */
async function overhead(appIds: ReadonlySet<string>) {
  const ps = await run([DOCKER, "ps", "-q", "--no-trunc", "--filter", "label=pier.managed=true"]);
  const ids = ps.stdout.split("\n").filter(Boolean);
  const kb = { shims: 0, proxies: 0, sandboxes: 0, inits: 0 };
  const count = { containers: 0, sandboxes: 0, instances: 0, builds: 0, proxies: 0 };
  if (ids.length === 0) return { kb, count };
  const inspect = await run([DOCKER, "inspect", ...ids]);
  const all = JSON.parse(inspect.stdout) as {
    Id: string;
    State: { Pid: number };
    Config: { Labels: Record<string, string> };
    NetworkSettings: { Ports: Record<string, { HostPort: string }[] | null> | null };
  }[];
  const procs = processes();
  const children = (pid: number): Proc[] => {
    const direct = procs.filter((p) => p.ppid === pid);
    return direct.concat(direct.flatMap((p) => children(p.pid)));
  };
  const ports = new Set<string>();
  for (const c of all) {
    if (!appIds.has(c.Config.Labels["pier.app"] ?? "")) continue;
    count.containers++;
    const shim = procs.find((p) => p.args[0]?.includes("containerd-shim") && p.args.includes(c.Id));
    if (shim) kb.shims += pssKb(shim.pid);
    const sandbox = c.Config.Labels["pier.role"] === "sandbox";
    if (sandbox) {
      count.sandboxes++;
      if (c.Config.Labels["pier.sandbox-for"] === "build") count.builds++;
      // The whole sandbox is overhead: the engine's init and `sleep infinity`.
      kb.sandboxes += pssKb(c.State.Pid) + children(c.State.Pid).reduce((s, p) => s + pssKb(p.pid), 0);
    } else {
      count.instances++;
      // The engine's init (tini) in front of the app's own processes.
      kb.inits += pssKb(c.State.Pid);
    }
    for (const b of Object.values(c.NetworkSettings.Ports ?? {}))
      for (const x of b ?? []) ports.add(x.HostPort);
  }
  for (const p of procs) {
    if (!p.args[0]?.endsWith("docker-proxy")) continue;
    const i = p.args.indexOf("-host-port");
    if (i >= 0 && ports.has(p.args[i + 1] ?? "")) {
      kb.proxies += pssKb(p.pid);
      count.proxies++;
    }
  }
  return { kb, count };
}

const daemonsPss = () =>
  processes()
    .filter((p) => /(^|\/)(dockerd|containerd)$/.test(p.args[0] ?? ""))
    .reduce((s, p) => s + pssKb(p.pid), 0);

async function main(): Promise<void> {
  const pier = new Pier();
  const names: string[] = [];
  const ids = new Set<string>();
  const times: number[] = [];
  const t0 = performance.now();
  try {
    const daemonsBefore = daemonsPss();
    await pier.start();
    await pier.addKey();
    for (let i = 0; i < N; i++) {
      const node = i % 2 === 1;
      const name = `dens-${node ? "n" : "d"}${i}`;
      const created = await pier.cliJson<{ id: string }>([
        "create",
        "--type",
        node ? "node" : "docker",
        name,
      ]);
      if (node) {
        const r = await pier.cli(["env", "set", "CC_NODE_VERSION", "22.16.0", "--app", name]);
        if (r.code !== 0) throw new Error(`env set failed: ${r.stderr}`);
      }
      const repo = await pier.repo(name, node ? TINY_NODE_APP : NODE_DOCKER_APP, created.id);
      const s = performance.now();
      const p = await pier.push(repo);
      if (p.code !== 0) throw new Error(`push of ${name} (app ${i + 1}) failed (${p.code}):\n${p.stderr}`);
      await until200(pier, name, 60_000);
      times.push(performance.now() - s);
      names.push(name);
      ids.add(created.id);
      if ((i + 1) % 10 === 0)
        process.stderr.write(
          `${i + 1} apps deployed (${((performance.now() - t0) / 1000).toFixed(0)} s; last ${(times[i]! / 1000).toFixed(2)} s)\n`,
        );
    }
    // Idle: the retired instances of each first deploy are gone, the next deploys' sandboxes made.
    await sleep(15_000);
    const serving = await answering(pier, names);
    const rss = pier.proc?.pid ? rssKb(pier.proc.pid) : 0;
    const o = await overhead(ids);
    const daemonsAfter = daemonsPss();
    const total = o.kb.shims + o.kb.proxies + o.kb.sandboxes + o.kb.inits;

    // Restart: the control plane and the edge go (a reboot of Pier's processes; the apps keep running).
    const haproxyPid = Number(readFileSync(`${pier.dataDir}/edge/haproxy.pid`, "utf8").trim().split("\n")[0]);
    await pier.stopServer();
    process.kill(haproxyPid, "SIGTERM");
    while ((await answering(pier, names.slice(0, 1))) > 0) await sleep(50);
    const r0 = performance.now();
    const starting = pier.start();
    const pending = new Set(names);
    while (pending.size > 0 && performance.now() - r0 < 120_000) {
      await Promise.all([...pending].map(async (n) => (await ok(pier, n)) && pending.delete(n)));
      if (pending.size > 0) await sleep(50);
    }
    const restartS = (performance.now() - r0) / 1000;
    await starting;

    const first = median(times.slice(0, 10));
    const last = median(times.slice(-10));
    const perApp = total / N;
    const verdict = (good: boolean) => (good ? "meets" : "MISSES");
    console.log(
      `apps: ${N} (Dockerfile and Node.js, alternating); ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
    console.log(`answering through the edge: ${serving}/${N} (target ${N}) ${verdict(serving === N)}`);
    console.log(`pier server RSS: ${mib(rss)} (target < 150 MiB) ${verdict(rss < 150 * 1024)}`);
    console.log(
      `per idle app beyond its own processes: ${mib(perApp)} PSS (target <= 15 MiB) ${verdict(perApp <= 15 * 1024)}`,
    );
    console.log(
      `  of which: shims ${mib(o.kb.shims / N)}, docker-proxy ${mib(o.kb.proxies / N)}, sandboxes ${mib(o.kb.sandboxes / N)}, inits in instances ${mib(o.kb.inits / N)}`,
    );
    console.log(
      `  containers ${o.count.containers} (sandboxes ${o.count.sandboxes}, of which build ${o.count.builds}; instances ${o.count.instances}); docker-proxy processes ${o.count.proxies}`,
    );
    console.log(
      `  dockerd + containerd PSS grew by ${mib((daemonsAfter - daemonsBefore) / N)} per app (not counted above)`,
    );
    console.log(
      `deploy time, median of the last 10 over the first 10: ${(last / first).toFixed(2)} (${(last / 1000).toFixed(2)} s / ${(first / 1000).toFixed(2)} s; target <= 1.2) ${verdict(last / first <= 1.2)}`,
    );
    const blocks: string[] = [];
    for (let b = 0; b < N; b += 50)
      blocks.push(`${b + 1}-${Math.min(b + 50, N)}: ${(median(times.slice(b, b + 50)) / 1000).toFixed(2)} s`);
    console.log(`  median deploy time by 50 apps: ${blocks.join(", ")}`);
    console.log(
      `pier server start (edge killed too) to all ${N} routes served: ${restartS.toFixed(2)} s${pending.size ? ` (${pending.size} never)` : ""} (target < 10 s) ${verdict(pending.size === 0 && restartS < 10)}`,
    );
  } finally {
    const c0 = performance.now();
    await pier.destroy();
    const scope = scopeOf(pier.dataDir);
    const left = async (argv: string[]) =>
      (await run([DOCKER, ...argv, "--filter", `label=pier.scope=${scope}`])).stdout
        .split("\n")
        .filter(Boolean).length;
    process.stderr.write(
      `cleaned up in ${((performance.now() - c0) / 1000).toFixed(0)} s: ${await left(["ps", "-aq"])} containers and ${await left(["network", "ls", "-q"])} networks of this Pier left\n`,
    );
  }
}

await main();
