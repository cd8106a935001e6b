// The swarm lab's lock (scripts/swarm-lab.sh `lock` / `unlock`, what `up` takes first and `down` releases
// last; ADR 0030, ADR 0027): the script as a subprocess on a throwaway lock directory, no lab brought up.
// Owners are real processes (a `sleep` of this test, or one that has ended): what the lock reads is /proc.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const SCRIPT = fileURLToPath(new URL("../../../../scripts/swarm-lab.sh", import.meta.url));
const NAME = "unitlock";

describe("the swarm lab's lock", () => {
  let dir = "";
  const sleepers: ChildProcess[] = [];
  const sleeper = (): number => {
    const p = spawn("sleep", ["300"], { stdio: "ignore" });
    sleepers.push(p);
    return p.pid ?? 0;
  };
  /** A pid that was a process and is none now. */
  const gone = (): number => {
    const r = spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" });
    return Number(r.stdout.trim());
  };
  const script = (args: string[], owner?: number) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PIER_SWARM_LAB_NAME: NAME,
      PIER_SWARM_LAB_NET: "10.250.250",
      PIER_SWARM_LAB_LOCK_DIR: dir,
    };
    delete env.PIER_SWARM_LAB_OWNER;
    if (owner !== undefined) env.PIER_SWARM_LAB_OWNER = String(owner);
    const r = spawnSync("bash", [SCRIPT, ...args], { env, encoding: "utf8" });
    return { code: r.status, stderr: r.stderr };
  };
  const lockFile = () => join(dir, `${NAME}.lock`);
  const holder = () => (existsSync(lockFile()) ? readFileSync(lockFile(), "utf8").split(" ")[0] : "");

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "pier-lab-lock-"));
  });
  after(() => {
    for (const p of sleepers) p.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  test("taken: the lock holds its owner's pid; the owner takes it again quietly", () => {
    const owner = sleeper();
    assert.deepEqual(script(["lock"], owner), { code: 0, stderr: "" });
    assert.equal(holder(), String(owner));
    assert.deepEqual(script(["lock"], owner), { code: 0, stderr: "" });
    assert.deepEqual(script(["unlock"], owner), { code: 0, stderr: "" });
  });

  test("refused while its owner lives: the error names the lab, the pid, its command and how to free it", () => {
    const owner = sleeper();
    assert.equal(script(["lock"], owner).code, 0);
    const other = sleeper();
    const r = script(["lock"], other);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr.trim(),
      `swarm-lab: the lab ${NAME} is in use by pid ${owner} (sleep 300); free it with ` +
        `\`PIER_SWARM_LAB_NAME=${NAME} PIER_SWARM_LAB_NET=10.250.250 npm run swarm-lab -- down\` or \`kill ${owner}\``,
    );
    assert.equal(holder(), String(owner));
    // Nor may another owner release it, or a process without an owner (kill, start, an owner's down).
    assert.equal(script(["unlock"], other).code, 1);
    assert.equal(script(["unlock"]).code, 1);
    assert.equal(holder(), String(owner));
    assert.equal(script(["unlock"], owner).code, 0);
  });

  test("stale: a lock whose owner is gone is taken over with a one-line notice", () => {
    const dead = gone();
    assert.equal(script(["lock"], sleeper()).code, 0);
    // The lock file of an owner that has ended (as a killed test file leaves it).
    spawnSync("sh", ["-c", `echo "${dead} 1" > "${lockFile()}"`]);
    const next = sleeper();
    assert.deepEqual(script(["lock"], next), {
      code: 0,
      stderr: `swarm-lab: the lab ${NAME}'s lock was held by pid ${dead}, which is gone: taking it over\n`,
    });
    assert.equal(holder(), String(next));
    assert.equal(script(["unlock"], next).code, 0);
  });

  test("released: after its owner's unlock, no lock is left and another owner takes it quietly", () => {
    const owner = sleeper();
    assert.equal(script(["lock"], owner).code, 0);
    assert.deepEqual(script(["unlock"], owner), { code: 0, stderr: "" });
    assert.equal(existsSync(lockFile()), false);
    const next = sleeper();
    assert.deepEqual(script(["lock"], next), { code: 0, stderr: "" });
    assert.equal(script(["unlock"], next).code, 0);
  });

  test("an owner that is not a running process is refused", () => {
    assert.match(script(["lock"], gone()).stderr, /the lab's owner, pid [0-9]+, is not running/);
    assert.match(script(["lock"], -1).stderr, /PIER_SWARM_LAB_OWNER '-1' is not a process id/);
  });
});
