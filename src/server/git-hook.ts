// git's pre-receive hook for an app's repository. It hands the push to `pier server` over a unix socket,
// prints the deploy log as it comes (git shows it to the pusher as `remote:` lines) and exits non-zero
// when the deployment does not succeed, so git refuses the ref update.
import { connect } from "node:net";

const ZERO = /^0{40}$/;
const out = (line: string) => process.stdout.write(`${line}\n`);

async function readStdin(): Promise<string> {
  let s = "";
  for await (const c of process.stdin) s += (c as Buffer).toString("utf8");
  return s;
}

async function main(): Promise<number> {
  const updates = (await readStdin())
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => {
      const [oldSha = "", newSha = "", ref = ""] = l.trim().split(/\s+/);
      return { oldSha, newSha, ref };
    });
  for (const u of updates) {
    if (u.ref !== "refs/heads/master") {
      out(`Pier deploys the master branch only; '${u.ref.replace(/^refs\/heads\//, "")}' was not accepted.`);
      out("To deploy another branch: git push pier <branch>:master");
      return 1;
    }
    if (ZERO.test(u.newSha)) {
      out(
        "Deleting master is not allowed: it holds the deployed commit. Use `pier delete` to remove the app.",
      );
      return 1;
    }
  }
  const master = updates.find((u) => u.ref === "refs/heads/master");
  if (!master) return 0;
  const socket = process.env.PIER_HOOK_SOCKET;
  const token = process.env.PIER_PUSH_TOKEN;
  if (!socket || !token) {
    out("Pier: this repository is served by pier server's SSH git endpoint only; push there.");
    return 1;
  }
  const gitEnv: Record<string, string> = {};
  for (const k of ["GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH"]) {
    const v = process.env[k];
    if (v) gitEnv[k] = v;
  }
  return new Promise<number>((resolve) => {
    const sock = connect(socket);
    let buf = "";
    let result: number | null = null;
    sock.on("connect", () => sock.write(`${JSON.stringify({ token, ...master, gitEnv })}\n`));
    sock.on("error", (e) => {
      out(`Pier is not running or not reachable (${e.message}); the push was not deployed.`);
      resolve(1);
    });
    sock.on("data", (c: Buffer) => {
      buf += c.toString("utf8");
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const l of lines) {
        if (!l) continue;
        try {
          const m = JSON.parse(l) as { log?: string; result?: string; message?: string };
          if (typeof m.log === "string") out(m.log);
          if (m.result) {
            if (m.message) out(m.message);
            result = m.result === "ok" ? 0 : 1;
          }
        } catch {
          out(l);
        }
      }
    });
    sock.on("close", () => {
      if (result === null) out("Pier closed the connection before the deployment ended.");
      resolve(result ?? 1);
    });
  });
}

main().then(
  (code) => process.stdout.write("", () => process.exit(code)),
  (e: Error) => {
    out(`Pier hook error: ${e.message}`);
    process.exit(1);
  },
);
