// A Next.js app as people write one (App Router, the framework's own build and server), pushed to the Node.js
// runtime with the contract's variables only: NODE_ENV=production, the build run by CC_POST_BUILD_HOOK, the
// health gate on its home page. Next.js, React and the compiler's native binary (@next/swc-linux-x64-gnu, an
// optional dependency) come from the npm registry like any app's dependencies. A server route reads a
// variable at request time: set with `pier env set`, it reaches the app at the next restart. A TypeScript
// page needs the compiler, a dev dependency: refused without it (the previous release serving), built with it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Pier } from "./harness.js";

const NEXT = "16.4.6";
const REACT = "19.3.1";

const FILES: Record<string, string> = {
  "package.json": `${JSON.stringify(
    {
      name: "next-app",
      version: "1.0.0",
      private: true,
      scripts: { build: "next build", start: "next start" },
      dependencies: { next: NEXT, react: REACT, "react-dom": REACT },
      devDependencies: { typescript: "5.9.3", "@types/react": "19.3.3", "@types/node": "22.20.7" },
    },
    null,
    2,
  )}\n`,
  ".gitignore": "/node_modules\n/.next\n",
  "app/layout.js": [
    'export const metadata = { title: "Pier on Next.js" };',
    "export default function RootLayout({ children }) {",
    '  return (<html lang="en"><body>{children}</body></html>);',
    "}",
    "",
  ].join("\n"),
  "app/page.js": [
    "export default function Home() {",
    "  return <main><h1>Hello from Next.js on Pier</h1></main>;",
    "}",
    "",
  ].join("\n"),
  "app/api/hello/route.js": [
    'export const dynamic = "force-dynamic";',
    "export function GET() {",
    "  return Response.json({ greeting: process.env.GREETING ?? null, node: process.version });",
    "}",
    "",
  ].join("\n"),
};

describe("a Next.js app on the Node.js runtime", { timeout: 900_000 }, () => {
  const pier = new Pier();
  let repo = "";
  const hello = async () => {
    const r = await pier.get("nextapp", "/api/hello");
    assert.equal(r.status, 200, r.body);
    return JSON.parse(r.body) as { greeting: string | null; node: string };
  };

  before(async () => {
    await pier.start();
    await pier.addKey();
    const app = await pier.cliJson<{ id: string }>(["create", "--type", "node", "nextapp"]);
    await pier.setEnv("nextapp", {
      NODE_ENV: "production",
      CC_POST_BUILD_HOOK: "npm run build",
      CC_HEALTH_CHECK_PATH: "/",
      NEXT_TELEMETRY_DISABLED: "1",
      GREETING: "hello",
    });
    repo = await pier.repo("nextapp", FILES, app.id);
  });
  after(() => pier.destroy());

  test("a push builds it with next build and serves its pages and routes through the edge", async () => {
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    assert.match(push.stderr, /CC_POST_BUILD_HOOK/);
    assert.match(push.stderr, /Compiled successfully|Generating static pages/, "next build ran in the build");
    const home = await pier.get("nextapp", "/");
    assert.equal(home.status, 200);
    assert.match(home.body, /Hello from Next\.js on Pier/);
    assert.match(home.body, /<title>Pier on Next\.js<\/title>/);
    assert.equal((await hello()).greeting, "hello");
  });

  test("a variable changed with pier env reaches the server route at the restart", async () => {
    await pier.setEnv("nextapp", { GREETING: "bonjour" });
    const restart = await pier.cli(["restart", "--app", "nextapp"]);
    assert.equal(restart.code, 0, restart.stderr);
    assert.equal((await hello()).greeting, "bonjour");
  });

  test("a second push with a changed page serves the new page", async () => {
    await pier.commit(
      repo,
      { "app/page.js": FILES["app/page.js"]!.replace("Hello from", "Version two of") },
      "v2",
    );
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    const home = await pier.get("nextapp", "/");
    assert.equal(home.status, 200);
    assert.match(home.body, /Version two of Next\.js on Pier/);
  });

  test("a TypeScript page fails the build without its compiler, names it, and builds once dev dependencies are installed", async () => {
    await pier.commit(
      repo,
      {
        "app/typed/page.tsx": [
          'const words: readonly string[] = ["typed", "page"];',
          "export default function Typed() {",
          '  return <main><p>{words.join(" ") + " on Pier"}</p></main>;',
          "}",
          "",
        ].join("\n"),
      },
      "a TypeScript page",
    );
    const refused = await pier.push(repo);
    assert.notEqual(refused.code, 0, "NODE_ENV=production installs no dev dependencies: no TypeScript");
    assert.match(refused.stderr, /typescript/i);
    assert.match(
      (await pier.get("nextapp", "/")).body,
      /Version two of/,
      "the previous release keeps serving",
    );
    await pier.setEnv("nextapp", { CC_NODE_DEV_DEPENDENCIES: "install" });
    // `pier restart` would redeploy the serving release's commit: the TypeScript page comes with a push.
    await pier.commit(repo, { "README.md": "A Next.js app on Pier.\n" }, "again, with dev dependencies");
    const push = await pier.push(repo);
    assert.equal(push.code, 0, push.stderr);
    const typed = await pier.get("nextapp", "/typed");
    assert.equal(typed.status, 200);
    assert.match(typed.body, /typed page on Pier/);
  });
});
