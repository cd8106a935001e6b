// A followed runtime log follows the app: instances that start later join it, a restarted one goes on after
// its last line, and it ends only when its reader goes or the app is deleted.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pino from "pino";
import { LABEL } from "../../../src/core/labels.js";
import { parseCursors } from "../../../src/core/log-times.js";
import {
  type FollowRange,
  followAppLogs,
  InstanceStarts,
  type RuntimeLogLine,
} from "../../../src/server/log-follow.js";
import { FakeEngine } from "../../support/fake-engine.js";
import { MemoryStore } from "../../support/memory-store.js";
import { fakeInstances } from "./fakes.js";

const APP = "app-1";

function setUp() {
  const engine = new FakeEngine();
  const store = new MemoryStore();
  const starts = new InstanceStarts();
  const deps = {
    engine,
    store,
    starts,
    instances: fakeInstances({ engine, store }),
    logger: pino({ level: "silent" }),
  };
  const add = (id: string, n: number, app = APP) =>
    engine.addInstance({
      id,
      labels: { [LABEL.app]: app, [LABEL.instance]: String(n) },
      startedAt: new Date().toISOString(),
    });
  const got: string[] = [];
  const sent: RuntimeLogLine[] = [];
  const stop = new AbortController();
  const follow = (o: FollowRange = {}, signal = stop.signal) =>
    followAppLogs(
      deps,
      APP,
      o,
      (l) => {
        got.push(`${l.instance} ${l.line}`);
        sent.push(l);
      },
      signal,
    );
  return { engine, starts, add, got, sent, stop, follow };
}

const tick = () => new Promise((r) => setTimeout(r, 5));
async function until(what: () => boolean, label: string): Promise<void> {
  for (let i = 0; i < 200 && !what(); i++) await tick();
  assert.ok(what(), label);
}

describe("a followed runtime log", () => {
  test("an instance that starts later joins it from its start; one that ends leaves without ending it", async () => {
    const { engine, starts, add, got, stop, follow } = setUp();
    add("i-1", 1);
    engine.print("i-1", "old one");
    const following = follow();
    await until(() => got.length === 1, "the serving instance's line");
    engine.print("i-1", "ends soon");
    await engine.stopInstance("i-1", 10);
    await tick();
    engine.print("i-1", "never followed: it is stopped");
    add("i-2", 2);
    engine.print("i-2", "new one ready");
    starts.started(APP);
    await until(() => got.includes("2 new one ready"), "the new instance's line");
    engine.print("i-2", "and later");
    await until(() => got.includes("2 and later"), "a later line");
    let ended = false;
    void following.then(() => (ended = true));
    await tick();
    assert.equal(ended, false, "no instance of the first listing runs: the follow goes on");
    stop.abort();
    await following;
    assert.deepEqual(got, ["1 old one", "1 ends soon", "2 new one ready", "2 and later"]);
  });

  test("a reader given back the cursors of lines it had goes on after them; an instance it has none of, as asked", async () => {
    const { engine, add, got, sent, follow } = setUp();
    add("i-1", 1);
    for (const l of ["one", "two", "three"]) engine.print("i-1", l);
    const first = new AbortController();
    const following = follow({}, first.signal);
    await until(() => got.length === 3, "the first follow's lines");
    first.abort();
    await following;
    assert.ok(
      sent.every((l) => l.cursor?.startsWith("i-1@")),
      JSON.stringify(sent),
    );
    // The reader went after "two" (its last line printed); meanwhile i-1 printed on, and i-2 started.
    const had = sent[1]?.cursor ?? "";
    engine.print("i-1", "four");
    add("i-2", 2);
    engine.print("i-2", "fresh");
    got.length = 0;
    const again = new AbortController();
    const second = follow({ tail: 1, after: parseCursors(had) }, again.signal);
    await until(() => got.length === 3, "the second follow's lines");
    await tick();
    again.abort();
    await second;
    assert.deepEqual(got.sort(), ["1 four", "1 three", "2 fresh"]);
  });

  test("an instance restarted by the engine goes on after its last line sent, repeating none", async () => {
    const { engine, starts, add, got, stop, follow } = setUp();
    add("i-1", 1);
    engine.print("i-1", "first run");
    const following = follow();
    await until(() => got.length === 1, "the first line");
    engine.print("i-1", "crashing");
    engine.exit("i-1", 1);
    await engine.restartInstance("i-1", 10);
    engine.print("i-1", "second run");
    starts.started(APP);
    await until(() => got.includes("1 second run"), "the restarted run's line");
    stop.abort();
    await following;
    assert.deepEqual(got, ["1 first run", "1 crashing", "1 second run"]);
  });

  test("an instance that starts while the first listing is under way is followed once", async () => {
    const { engine, starts, add, got, stop, follow } = setUp();
    add("i-1", 1);
    engine.print("i-1", "hello");
    // The first listing is slow: a look told of the start meanwhile would list and follow before it ends.
    let calls = 0;
    engine.before.listInstances = async () => {
      if (calls++ > 0) return;
      starts.started(APP);
      await new Promise((r) => setTimeout(r, 30));
    };
    const following = follow();
    await until(() => got.length === 1, "the line");
    for (let i = 0; i < 10; i++) await tick();
    engine.print("i-1", "and later");
    await until(() => got.length >= 2, "the later line");
    for (let i = 0; i < 5; i++) await tick();
    stop.abort();
    await following;
    assert.deepEqual(got, ["1 hello", "1 and later"], "one stream of the instance, not two");
  });

  test("another app's starts are not followed; the app's deletion ends the follow", async () => {
    const { engine, starts, add, got, follow } = setUp();
    const following = follow();
    add("other", 1, "app-2");
    engine.print("other", "not yours");
    starts.started("app-2");
    await tick();
    add("i-1", 1);
    engine.print("i-1", "yours");
    starts.started(APP);
    await until(() => got.length === 1, "the app's line");
    starts.gone(APP);
    await following;
    assert.deepEqual(got, ["1 yours"]);
  });

  test("an app with no instance yet is followed until its first starts", async () => {
    const { engine, starts, add, got, stop, follow } = setUp();
    const following = follow({ tail: 0 });
    await tick();
    add("i-1", 1);
    engine.print("i-1", "booted");
    starts.started(APP);
    await until(() => got.length === 1, "the first instance's line");
    stop.abort();
    await following;
    assert.deepEqual(got, ["1 booted"]);
  });

  test("the reader's going ends it, and no one is told of the app's starts any more", async () => {
    const { starts, stop, follow } = setUp();
    let told = 0;
    const off = starts.on(APP, () => told++);
    const following = follow();
    stop.abort();
    await following;
    starts.started(APP);
    assert.equal(told, 1, "only the listener still on");
    off();
    starts.started(APP);
    assert.equal(told, 1);
  });
});
