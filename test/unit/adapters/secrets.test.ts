import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { SecretBox } from "../../../src/adapters/secret-box.js";
import { SqliteStore } from "../../../src/adapters/store/sqlite.js";
import { parsePrivateKey } from "../../../src/server/apps.js";

test("SecretBox seals with a fresh IV each time and opens what it sealed; tampering is detected", () => {
  const box = SecretBox.fromKey(randomBytes(32));
  const a = box.seal("hunter2");
  const b = box.seal("hunter2");
  assert.notEqual(a, b);
  assert.ok(!a.includes("hunter2"));
  assert.equal(box.open(a), "hunter2");
  const raw = Buffer.from(a.slice("pier1:".length), "base64");
  raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
  assert.throws(() => box.open(`pier1:${raw.toString("base64")}`), /cannot be decrypted/);
  assert.throws(() => SecretBox.fromKey(randomBytes(32)).open(a), /cannot be decrypted.*secret\.key/s);
});

test("the key file is made once with mode 0600, and a damaged one is refused with what to do", () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-secret-"));
  const file = join(dir, "secret.key");
  const sealed = SecretBox.fromFile(file).seal("x");
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(SecretBox.fromFile(file).open(sealed), "x", "the same key is read back");
  writeFileSync(join(dir, "bad.key"), "short\n");
  assert.throws(() => SecretBox.fromFile(join(dir, "bad.key")), /does not hold a base64 32-byte key/);
});

test("the store keeps variables, release variables and app secrets sealed; legacy clear values are sealed at start", async () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-store-"));
  const file = join(dir, "pier.db");
  const box = SecretBox.fromKey(randomBytes(32));
  let store = new SqliteStore(file, box);
  await store.createApp({
    id: "app-1",
    name: "one",
    type: "node",
    flavor: "nano",
    buildFlavor: "M",
    instances: 1,
    task: null,
  });
  await store.changeEnv("app-1", { TOKEN: "clear-token-value" }, []);
  await store.setAppSecret("app-1", "ssh_private_key", "PRIVATE-KEY-TEXT");
  await store.createRelease({
    id: "rel-1",
    appId: "app-1",
    deploymentId: "dep-1",
    image: "i",
    commit: "c",
    env: { TOKEN: "clear-token-value" },
    httpPort: 8080,
    tcpPort: null,
    task: false,
  });
  assert.deepEqual(await store.getEnv("app-1"), { TOKEN: "clear-token-value" });
  assert.equal(await store.getAppSecret("app-1", "ssh_private_key"), "PRIVATE-KEY-TEXT");
  assert.equal((await store.getRelease("rel-1"))?.env.TOKEN, "clear-token-value");
  store.close();

  const db = new Database(file);
  const dump = JSON.stringify([
    db.prepare("SELECT * FROM env").all(),
    db.prepare("SELECT * FROM releases").all(),
    db.prepare("SELECT * FROM app_secrets").all(),
  ]);
  assert.ok(!dump.includes("clear-token-value"));
  assert.ok(!dump.includes("PRIVATE-KEY-TEXT"));
  // A value written in clear by an older Pier:
  db.prepare("INSERT INTO env (app_id, name, value) VALUES ('app-1', 'OLD', 'legacy-clear')").run();
  db.close();
  store = new SqliteStore(file, box);
  assert.equal((await store.getEnv("app-1")).OLD, "legacy-clear");
  store.close();
  const after = new Database(file);
  const row = after.prepare("SELECT value FROM env WHERE name = 'OLD'").get() as { value: string };
  after.close();
  assert.ok(row.value.startsWith("pier1:"), "sealed in place at start");
});

test("private keys: an unencrypted key is accepted and described; public, locked or damaged ones are refused", () => {
  const dir = mkdtempSync(join(tmpdir(), "pier-key-"));
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "k", "-f", join(dir, "k")]);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "pass", "-f", join(dir, "locked")]);
  const info = parsePrivateKey(readFileSync(join(dir, "k"), "utf8"));
  assert.equal(info.type, "ssh-ed25519");
  assert.equal(info.publicKey, readFileSync(join(dir, "k.pub"), "utf8").split(" ").slice(0, 2).join(" "));
  const fp = execFileSync("ssh-keygen", ["-l", "-f", join(dir, "k.pub")], { encoding: "utf8" }).split(" ")[1];
  assert.equal(info.fingerprint, fp);
  assert.throws(
    () => parsePrivateKey(readFileSync(join(dir, "k.pub"), "utf8")),
    /not a private key.*|pass the file without \.pub/,
  );
  assert.throws(() => parsePrivateKey(readFileSync(join(dir, "locked"), "utf8")), /passphrase/);
  assert.throws(
    () => parsePrivateKey("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"),
    /cannot be read/,
  );
});
