// File-system buckets (core/buckets.ts): CC_FS_BUCKET* read into mounts, every malformed value named.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { addonVariables } from "../../../src/core/addons.js";
import { bucketMounts, bucketNode, bucketRequests, parseBucketVariable } from "../../../src/core/buckets.js";

const UPLOADS = { id: "adn-1", name: "uploads", host: "pier-addon-adn-1" };
const MEDIA = { id: "adn-2", name: "media", host: "pier-addon-adn-2" };

describe("parseBucketVariable", () => {
  const ok: [string, string, string][] = [
    ["/wp-content/uploads:pier-addon-adn-1", "/wp-content/uploads", "pier-addon-adn-1"],
    ["wp-content/uploads/:pier-addon-adn-1", "/wp-content/uploads", "pier-addon-adn-1"],
    ["//data//files:uploads", "/data/files", "uploads"],
    ["/a.b/c@d+e_f-g:uploads", "/a.b/c@d+e_f-g", "uploads"],
  ];
  for (const [value, path, bucket] of ok)
    it(`reads ${value}`, () => {
      assert.deepEqual(parseBucketVariable("CC_FS_BUCKET", value), {
        variable: "CC_FS_BUCKET",
        path,
        bucket,
      });
    });

  const bad: [string, RegExp][] = [
    ["uploads", /must be <path>:<bucket>/],
    [":pier-addon-adn-1", /must be <path>:<bucket>/],
    ["/uploads:", /must be <path>:<bucket>/],
    ["/../etc:uploads", /must stay inside the app's folder/],
    ["/a/../../b:uploads", /must stay inside the app's folder/],
    ["/a/./b:uploads", /must stay inside the app's folder/],
    ["/:uploads", /not the app's root/],
    ["/a b:uploads", /may hold only letters/],
    ["/a,b:uploads", /may hold only letters/],
    ["/a:b:uploads", /may hold only letters/],
    ["/uploads:bad.name", /'bad.name' is not a bucket name/],
  ];
  for (const [value, rule] of bad)
    it(`refuses ${JSON.stringify(value)}, naming the variable`, () => {
      const r = parseBucketVariable("CC_FS_BUCKET_2", value);
      assert.equal(typeof r, "string");
      assert.match(r as string, rule);
      assert.match(r as string, /CC_FS_BUCKET_2/);
    });
});

describe("bucketRequests", () => {
  it("reads CC_FS_BUCKET and CC_FS_BUCKET_1..N in order, and no other variable", () => {
    const { requests, errors } = bucketRequests({
      CC_FS_BUCKET_10: "/j:media",
      CC_FS_BUCKET_2: "/b:media",
      CC_FS_BUCKET: "/a:uploads",
      CC_FS_BUCKETS: "/x:uploads",
      CC_FS_BUCKET_0: "/y:uploads",
      FS_BUCKET: "/z:uploads",
    });
    assert.deepEqual(errors, []);
    assert.deepEqual(
      requests.map((r) => r.variable),
      ["CC_FS_BUCKET", "CC_FS_BUCKET_2", "CC_FS_BUCKET_10"],
    );
  });

  it("refuses two buckets at one path, naming both variables", () => {
    const { errors } = bucketRequests({ CC_FS_BUCKET: "/a:uploads", CC_FS_BUCKET_1: "a/:media" });
    assert.deepEqual(errors, ["CC_FS_BUCKET_1 and CC_FS_BUCKET both mount a bucket at /a."]);
  });
});

describe("bucketMounts", () => {
  it("mounts each linked bucket, named by its BUCKET_HOST or its add-on's name, under the app's folder", () => {
    const r = bucketMounts(
      { CC_FS_BUCKET: "/wp-content/uploads:pier-addon-adn-1", CC_FS_BUCKET_1: "/media:media", OTHER: "x" },
      [UPLOADS, MEDIA],
      "blog",
      "/app",
    );
    assert.deepEqual(r, {
      mounts: [
        { addonId: "adn-1", target: "/app/wp-content/uploads" },
        { addonId: "adn-2", target: "/app/media" },
      ],
      errors: [],
    });
  });

  it("refuses a bucket that is not linked to the app, naming the variable, the bucket and the app", () => {
    const r = bucketMounts({ CC_FS_BUCKET: "/up:pier-addon-adn-9" }, [UPLOADS], "blog", "/app");
    assert.deepEqual(r.mounts, []);
    assert.deepEqual(r.errors, [
      "CC_FS_BUCKET names the bucket 'pier-addon-adn-9', which is not an fs add-on linked to blog.",
    ]);
  });

  it("no variable: no mount", () => {
    assert.deepEqual(bucketMounts({ A: "1" }, [UPLOADS], "blog", "/app"), { mounts: [], errors: [] });
  });
});

describe("bucketNode", () => {
  const on = (node: string | null) => [
    { ...UPLOADS, node },
    { ...MEDIA, node: node === null ? null : "node3" },
  ];
  it("pins the app to the node its buckets live on, and to none on one dockerd", () => {
    const vars = { CC_FS_BUCKET: "/up:pier-addon-adn-1" };
    const swarm = on("node2");
    assert.deepEqual(bucketNode(bucketMounts(vars, swarm, "blog", "/app").mounts, swarm, "blog"), {
      node: "node2",
    });
    const one = on(null);
    assert.deepEqual(bucketNode(bucketMounts(vars, one, "blog", "/app").mounts, one, "blog"), { node: null });
  });

  it("refuses buckets on two nodes, naming each bucket's node", () => {
    const linked = on("node2");
    const vars = { CC_FS_BUCKET: "/up:pier-addon-adn-1", CC_FS_BUCKET_1: "/media:media" };
    const r = bucketNode(bucketMounts(vars, linked, "blog", "/app").mounts, linked, "blog");
    assert.equal(r.node, null);
    assert.match(
      r.error ?? "",
      /blog mounts fs buckets on different nodes \(uploads on node2, media on node3\)/,
    );
  });
});

describe("the fs add-on's variables", () => {
  it("a link gives BUCKET_HOST, the bucket's name, and nothing else", () => {
    const vars = addonVariables("fs", "pier-addon-adn-1", { user: "", password: "", database: "" });
    assert.deepEqual(vars, { BUCKET_HOST: "pier-addon-adn-1" });
  });
});
