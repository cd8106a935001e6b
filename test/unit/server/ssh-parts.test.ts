// The SSH server's parts alone: the git command a client may run (receive-pack), and the hook protocol
// over a real loopback port (what the pre-receive hook reads: `L` log lines, then `R ok|failed`).
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { describe, test } from "node:test";
import {
  type PendingPush,
  type PushHandler,
  parseHookRequest,
  startHookServer,
} from "../../../src/server/ssh/hook.js";
import { parseGitCommand } from "../../../src/server/ssh/receive-pack.js";

describe("the git command of a connection", () => {
  const cases: [string, ReturnType<typeof parseGitCommand>][] = [
    ["git-receive-pack '/app-1.git'", { receive: true, ref: "app-1" }],
    ["git-upload-pack 'web'", { receive: false, ref: "web" }],
    ["git receive-pack web.git/", { receive: true, ref: "web" }],
    ["ls -la", "pier: only `git push` and `git fetch` are served over SSH."],
    ["git-receive-pack '../etc'", "pier: '../etc' is not an app id (see `pier apps`)."],
    ["git-receive-pack 'Web'", "pier: 'Web' is not an app id (see `pier apps`)."],
  ];
  for (const [command, want] of cases) {
    test(command, () => assert.deepEqual(parseGitCommand(command), want));
  }
});

describe("the hook's request", () => {
  test("PUSH with its token and refs, and only git's quarantine variables", () => {
    const text =
      "PUSH tok 000 111 refs/heads/master\nENV GIT_QUARANTINE_PATH /q\nENV LD_PRELOAD /x.so\nEND\n";
    assert.deepEqual(parseHookRequest(text), {
      token: "tok",
      oldSha: "000",
      newSha: "111",
      ref: "refs/heads/master",
      gitEnv: { GIT_QUARANTINE_PATH: "/q" },
    });
  });
  test("anything else is not a request", () => {
    assert.equal(parseHookRequest("PUSH tok 000\nEND\n"), null);
    assert.equal(parseHookRequest("HELLO\nEND\n"), null);
  });
});

describe("the hook protocol", () => {
  async function exchange(pending: Map<string, PendingPush>, onPush: PushHandler, request: string) {
    const live = new Set<Socket>();
    const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
    const server = await startHookServer({ pending, onPush, logger }, live);
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    try {
      return await new Promise<string>((resolve, reject) => {
        let out = "";
        const sock = connect({ host: "127.0.0.1", port }, () => sock.write(request));
        sock.on("data", (c) => {
          out += c.toString();
        });
        sock.on("end", () => resolve(out));
        sock.on("error", reject);
      });
    } finally {
      server.close();
    }
  }
  const push = (): PendingPush => ({
    appId: "app-1",
    fingerprint: "SHA256:k",
    repoDir: "/r",
    controller: new AbortController(),
    conn: { deploys: 0 },
  });

  test("an unknown token is refused: the hook fails the push", async () => {
    const out = await exchange(
      new Map(),
      async () => ({ ok: true, message: "" }),
      "PUSH nope 0 1 refs/heads/master\nEND\n",
    );
    assert.equal(out, "R failed pier: this push is not known to the server (expired token)\n");
  });

  test("a known push: its log as L lines, credentials masked, then the outcome", async () => {
    const p = push();
    let deploysDuring = -1;
    const out = await exchange(
      new Map([["tok", p]]),
      async (req) => {
        deploysDuring = p.conn?.deploys ?? -1;
        await req.log("Cloning https://user:secret@example.com/x.git");
        await req.log("two\nlines");
        return { ok: false, message: `first\nPush rejected: ${req.newSha} on ${req.ref}` };
      },
      "PUSH tok 0 1 refs/heads/master\nEND\n",
    );
    assert.equal(
      out,
      [
        "L Cloning https://user:****@example.com/x.git",
        "L two",
        "L lines",
        "L first",
        "R failed Push rejected: 1 on refs/heads/master",
        "",
      ].join("\n"),
    );
    assert.equal(deploysDuring, 1, "the connection is busy while its deploy runs");
    assert.equal(p.conn?.deploys, 0);
  });

  test("a handler that throws fails the push with an internal error", async () => {
    const out = await exchange(
      new Map([["tok", push()]]),
      async () => {
        throw new Error("boom");
      },
      "PUSH tok 0 1 refs/heads/master\nEND\n",
    );
    assert.equal(out, "R failed pier: internal error: boom\n");
  });
});
