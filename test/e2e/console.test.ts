// The web console in a real browser (issue 10): Debian's Chromium driven by playwright-core against a real
// `pier server`. A user signs in, creates an app, sets two variables with Update Changes (and `pier env`
// shows them), pushes and watches the deployment log reach the health-check lines, rolls back, creates an
// add-on linked from its Applications screen and links it from Service Dependencies, follows the runtime
// logs, reads the page at a phone's width, and signs in with a token scoped to one app. Each page's
// screenshot is written to docs/console/ on every run.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { CA, LEAF, LEAF_KEY, OTHER_KEY } from "../unit/core/tls-fixtures.js";
import { type BrowserNetns, browserNetns } from "./browser-netns.js";
import { adminToken as adminTokenOf, signIn as signInAs } from "./console-page.js";
import { NODE_DOCKER_APP, Pier, ROOT } from "./harness.js";

const SHOTS = join(ROOT, "docs/console");

describe("the web console in a browser", { timeout: 420_000 }, () => {
  // No ACME server here: domains stay `pending` until a user's certificate is set (docs/guide.md).
  const pier = new Pier({ PIER_ACME_DIRECTORY: "off" });
  let netns: BrowserNetns | undefined;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let appId = "";
  let repo = "";
  /** What the page logged as an error (a CSP violation, an uncaught exception): none is expected. */
  const pageErrors: string[] = [];
  const base = () => `http://127.0.0.1:${pier.apiPort}/`;
  const adminToken = () => adminTokenOf(pier);
  const signIn = (token: string) => signInAs(page, base(), token);
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const go = async (hash: string) => {
    await page.goto(`${base()}#/${hash}`);
  };
  const signOut = async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("API token").waitFor();
  };

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await pier.start();
    await pier.addKey();
    // In a network namespace of its own: Docker networks made by the tests beside it would otherwise
    // cancel its requests (net::ERR_NETWORK_CHANGED), which no user of this page would see.
    netns = await browserNetns([pier.apiPort]);
    browser = await chromium.launch({ executablePath: netns.executablePath, args: ["--no-sandbox"] });
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base() });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on("console", (m) => {
      if (m.type() === "error") pageErrors.push(m.text());
    });
    page.on("pageerror", (e) => pageErrors.push(e.message));
  });

  after(async () => {
    await browser?.close();
    await netns?.close();
    await pier.destroy();
  });

  test("the console's source puts values on the page as text only", () => {
    const dir = join(ROOT, "src/console");
    for (const f of readdirSync(dir)) {
      const text = readFileSync(join(dir, f), "utf8");
      assert.doesNotMatch(text, /dangerouslySetInnerHTML|innerHTML|insertAdjacentHTML/, f);
    }
  });

  test("sign in: a wrong token is refused where it was typed; an admin token sees apps and add-ons", async () => {
    const r = await page.goto(base());
    assert.match(r?.headers()["content-security-policy"] ?? "", /script-src 'self'; style-src 'self'/);
    await page.getByLabel("API token").fill("pier_not-a-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "not valid" }).waitFor();
    await page.getByLabel("API token").fill("");
    await shot("sign-in");
    await signIn(adminToken());
    assert.equal(await page.getByTestId("who").textContent(), "admin (admin)");
    await page.getByRole("heading", { name: "Apps" }).waitFor();
    await page.getByText("No app yet.").waitFor();
    await page.getByRole("heading", { name: "Add-ons" }).waitFor();
    await page.getByText("No add-on yet.").waitFor();
  });

  test("create an app; its Information panel shows the git URL (copied), the app URL and the push commands", async () => {
    await page.getByRole("link", { name: "Create an app" }).click();
    await page.getByLabel("Name").fill("Web!");
    await page.getByText("must start with a lowercase letter").waitFor();
    assert.equal(await page.getByRole("button", { name: "Create app" }).isDisabled(), true);
    await page.getByLabel("Name").fill("web");
    await page.getByLabel("Runtime type").selectOption("docker");
    await page.getByLabel("Flavor", { exact: true }).selectOption("nano");
    await page.getByLabel("Build flavor").selectOption("S");
    await shot("create-app");
    await page.getByRole("button", { name: "Create app" }).click();
    await page.waitForURL(/#\/apps\/web\/information$/);
    type Listed = { id: string; name: string; type: string; buildFlavor: string; gitUrl: string };
    const created = await pier.cliJson<Listed[]>(["apps"]);
    const web = created.find((a) => a.name === "web");
    assert.ok(web, "pier apps lists the app the console created");
    assert.equal(web.type, "docker");
    assert.equal(web.buildFlavor, "S");
    appId = web.id;
    const gitUrl = web.gitUrl;
    assert.match(gitUrl, new RegExp(`^git\\+ssh://git@[^/]+:${pier.sshPort}/${appId}\\.git$`));
    const info = page.getByTestId("information");
    await info.getByText(appId, { exact: true }).waitFor();
    assert.equal(await page.getByTestId("git-url").textContent(), gitUrl);
    await info.getByRole("link", { name: /http:\/\/web\.localhost/ }).waitFor();
    await page.getByText(`git remote add pier ${gitUrl}`).waitFor();
    await page.getByText("git push pier master").waitFor();
    await page.getByRole("button", { name: "Copy the git URL" }).click();
    await page.getByRole("status").filter({ hasText: "Copied" }).first().waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), gitUrl);
    await page.getByRole("button", { name: "Run as a task" }).waitFor();
    await shot("information");
    // An action's error shows where it was made: nothing was pushed yet.
    await page.getByRole("link", { name: "Deployments" }).click();
    await page.getByRole("button", { name: "Restart" }).click();
    await page.getByRole("alert").filter({ hasText: "web has never been pushed" }).waitFor();
  });

  test("variables: invalid names inline before sending, Update Changes applies both at once, pier env shows them", async () => {
    await page.getByRole("link", { name: "Environment variables" }).click();
    await page.getByText("No variable set.").waitFor();
    await page.getByRole("button", { name: "Add a variable" }).click();
    await page.getByRole("button", { name: "Add a variable" }).click();
    await page.getByLabel("Variable name 1").fill("1BAD");
    await page.getByLabel("Variable value 1").fill("x");
    await page.getByText('The variable name "1BAD" is invalid').waitFor();
    assert.equal(await page.getByRole("button", { name: "Update Changes" }).isDisabled(), true);
    await page.getByLabel("Variable name 1").fill("GREETING");
    await page.getByLabel("Variable value 1").fill("hello from the console");
    await page.getByLabel("Variable name 2").fill("API_SECRET");
    await page.getByLabel("Variable value 2").fill("s3cret-value");
    await page.getByText("2 changes to apply").waitFor();
    await page.getByRole("button", { name: "Update Changes" }).click();
    await page.getByText("Saved 2 changes").waitFor();
    const env = await pier.cliJson<Record<string, string>>(["env", "--app", "web", "--reveal"]);
    assert.deepEqual(env, { API_SECRET: "s3cret-value", GREETING: "hello from the console" });
    // The secret is masked until revealed; the other value is plain.
    const secret = page.getByLabel("Variable value 1");
    assert.equal(await page.getByLabel("Variable name 1").inputValue(), "API_SECRET");
    assert.equal(await secret.getAttribute("type"), "password");
    assert.equal(await page.getByLabel("Variable value 2").getAttribute("type"), "text");
    await page.getByRole("button", { name: "Reveal API_SECRET" }).click();
    assert.equal(await secret.getAttribute("type"), "text");
    // Expert mode: NAME=value lines; removing a line unsets it, a bad line is shown and nothing is sent.
    await page.getByRole("button", { name: "Expert mode" }).click();
    const text = page.getByLabel(/One NAME=value per line/);
    assert.equal(await text.inputValue(), "API_SECRET=s3cret-value\nGREETING=hello from the console");
    await text.fill("GREETING=hello from the console\nAPI_SECRET=s3cret-value\nbad line");
    await page.getByText(/Line 3/).waitFor();
    assert.equal(await page.getByRole("button", { name: "Update Changes" }).isDisabled(), true);
    await text.fill("GREETING=hello from the console\nAPP_VERSION=1");
    await page.getByText("2 changes to apply").waitFor();
    await shot("variables-expert");
    await page.getByRole("button", { name: "Update Changes" }).click();
    await page.getByText("Saved 2 changes").waitFor();
    assert.deepEqual(await pier.cliJson<Record<string, string>>(["env", "--app", "web"]), {
      APP_VERSION: "1",
      GREETING: "hello from the console",
    });
    await page.getByLabel("Variable name 1").waitFor();
    await shot("variables");
    // A change made elsewhere shows without a reload; opening the page afresh shows every variable.
    const set = await pier.cli(["env", "set", "FROM_CLI", "yes", "--app", "web"]);
    assert.equal(set.code, 0, set.stderr);
    await page.waitForFunction(
      () => [...document.querySelectorAll<HTMLInputElement>(".env-name")].some((e) => e.value === "FROM_CLI"),
      null,
      { timeout: 20_000 },
    );
    await go("apps/web/information");
    await go("apps/web/variables");
    await page.getByLabel("Variable name 3").waitFor();
    const names = await page
      .locator(".env-name")
      .evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value));
    assert.deepEqual(names, ["APP_VERSION", "FROM_CLI", "GREETING"]);
    await page.getByRole("button", { name: "Remove FROM_CLI" }).click();
    await page.getByRole("button", { name: "Update Changes" }).click();
    await page.getByText("Saved 1 change").waitFor();
    assert.deepEqual(Object.keys(await pier.cliJson<Record<string, string>>(["env", "--app", "web"])), [
      "APP_VERSION",
      "GREETING",
    ]);
  });

  test("deployments: a push's log streams live to the health-check lines; rollback to an earlier release", async () => {
    // A build step of a few seconds (never cached: the echo differs each run), so the deployment is still
    // running when the page, which polls every 2 s, shows it.
    const dockerfile = NODE_DOCKER_APP.Dockerfile!.replace(
      "WORKDIR /app",
      `RUN echo build ${Date.now()} && sleep 4\nWORKDIR /app`,
    );
    repo = await pier.repo("web", { ...NODE_DOCKER_APP, Dockerfile: dockerfile }, appId);
    await page.getByRole("link", { name: "Deployments" }).click();
    await page.getByText("No deployment yet").waitFor();
    const push = pier.push(repo);
    const log = page.getByTestId("deploy-log");
    // The page shows the new deployment by itself (polling) and follows its log (SSE) while it runs.
    await page.getByText("live", { exact: true }).first().waitFor({ timeout: 60_000 });
    await log.getByText("Health check of instance 0:").waitFor({ timeout: 120_000 });
    await log.getByText("Response from GET / is 200").waitFor({ timeout: 30_000 });
    const pushed = await push;
    assert.equal(pushed.code, 0, pushed.stderr);
    const rows = page.getByTestId("deployments").locator("tbody tr");
    await rows.first().getByText("succeeded").waitFor();
    assert.match((await rows.first().textContent()) ?? "", /git push/);
    assert.equal(JSON.parse((await pier.get("web")).body).greeting, "hello from the console");
    // A second release (a new commit), then roll back to v1 from the page.
    await pier.commit(repo, { "server.js": NODE_DOCKER_APP["server.js"]!.replace('|| "1"', '|| "2"') }, "v2");
    const second = await pier.push(repo);
    assert.equal(second.code, 0, second.stderr);
    await page.getByTestId("releases").getByText("v2").waitFor();
    await shot("deployments");
    await page.getByRole("button", { name: "Roll back to v1" }).click();
    await rows.first().getByText("rollback to v1").waitFor();
    await rows.first().getByText("succeeded").waitFor({ timeout: 60_000 });
    await page.getByTestId("deploy-log").getByText("Response from GET / is 200").waitFor();
    assert.equal(JSON.parse((await pier.get("web")).body).version, "1", "v1's image serves again");
    const releases = await pier.cliJson<{ number: number; current: boolean }[]>(["releases", "--app", "web"]);
    assert.equal(releases[0]?.number, 3);
    assert.equal(releases[0]?.current, true);
  });

  test("deployment actions: cancel a running deployment, scale, stop and restart", async () => {
    const rows = page.getByTestId("deployments").locator("tbody tr");
    // A build that would take a while: cancelled from the page, the push fails, v1's image keeps serving.
    const slow = NODE_DOCKER_APP.Dockerfile!.replace(
      "WORKDIR /app",
      `RUN sleep 60 # ${Date.now()}\nWORKDIR /app`,
    );
    await pier.commit(repo, { Dockerfile: slow }, "slow");
    const push = pier.push(repo);
    await page.getByRole("button", { name: "Cancel deployment" }).click({ timeout: 60_000 });
    await rows.first().getByText("cancelled").waitFor({ timeout: 30_000 });
    assert.notEqual((await push).code, 0, "the push of a cancelled deployment fails");
    assert.equal(JSON.parse((await pier.get("web")).body).version, "1");
    // Scale to two instances: a deployment of the same image.
    await page.getByLabel("Instances").fill("2");
    await page.getByRole("button", { name: "Scale" }).click();
    await rows.first().getByText("scale to 2 x nano").waitFor();
    await rows.first().getByText("succeeded").waitFor({ timeout: 60_000 });
    await page.getByText("2 × nano").first().waitFor();
    // Stop: the app answers 503; Restart brings it back.
    await page.getByRole("button", { name: "Stop" }).click();
    await page.locator(".app-head").getByText("stopped").waitFor();
    assert.equal((await pier.get("web")).status, 503);
    await page.getByRole("button", { name: "Restart" }).click();
    await rows.first().getByText("restart (API)").waitFor();
    await rows.first().getByText("succeeded").waitFor({ timeout: 60_000 });
    await page.locator(".app-head").getByText("running").waitFor();
    assert.equal((await pier.get("web")).status, 200);
    // Redeploy without cache: the deployment says so in its cause and its log's first line.
    await page.getByRole("button", { name: "Redeploy without cache" }).click();
    await rows.first().getByText("restart without cache (API)").waitFor();
    await rows.first().getByText("succeeded").waitFor({ timeout: 90_000 });
    await page
      .getByTestId("deploy-log")
      .getByText(/: restart without cache \(API\)\.$/m)
      .waitFor();
    const latest = (await pier.api("GET", "/v1/apps/web/deployments/latest")).json as {
      withoutCache: boolean;
    };
    assert.equal(latest.withoutCache, true);
    assert.equal((await pier.get("web")).status, 200);
  });

  test("the apps list reads every app's state and release in one request, not one per app", async () => {
    const asked: string[] = [];
    const onRequest = (r: { url: () => string }) => {
      const path = new URL(r.url()).pathname;
      if (path.startsWith("/v1/")) asked.push(path);
    };
    await go("");
    const row = page.getByTestId("apps").locator("tr", { hasText: "web" });
    await row.getByText("running", { exact: true }).waitFor();
    await row.getByText("2 of 2 running").waitFor();
    assert.match((await row.textContent()) ?? "", /v\d+/);
    // Counted from here: the app page of the test before polled its status until it was left, and its last
    // poll could leave after the navigation began.
    page.on("request", onRequest);
    // Two refreshes of the list (it polls every 5 s).
    const deadline = Date.now() + 16_000;
    while (asked.filter((p) => p === "/v1/apps").length < 2 && Date.now() < deadline)
      await page.waitForTimeout(250);
    page.off("request", onRequest);
    assert.ok(asked.filter((p) => p === "/v1/apps").length >= 2, asked.join(" "));
    assert.deepEqual(
      asked.filter((p) => /^\/v1\/apps\/[^/]+\/status$/.test(p)),
      [],
      "no status request per app",
    );
    // `pier apps` shows the same: running instances of how many, state and release.
    const listed = await pier.cli(["apps"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^NAME +ID +TYPE +FLAVOR +INSTANCES +STATE +RELEASE +URL/);
    assert.match(
      listed.stdout,
      /\nweb +app-\S+ +docker +nano \(build S\) +2\/2 +running +v\d+ +http:\/\/web\./,
    );
  });

  test("domains: add one (pending without ACME), errors in place, set a user certificate, see its expiry, remove", async () => {
    await go("apps/web/domains");
    await page.getByText("No custom domain.").waitFor();
    const add = async (name: string) => {
      await page.getByLabel("Add a domain").fill(name);
      await page.getByRole("button", { name: "Add domain" }).click();
    };
    // A bad name: the server's refusal shows beside the button.
    await add("bad_name.example.test");
    await page.getByRole("alert").filter({ hasText: "bad_name.example.test" }).waitFor();
    await add("www.example.test");
    const table = page.getByTestId("domains");
    const www = table.locator("tr", { hasText: "www.example.test" });
    await www.getByText("pending").waitFor();
    await www.getByText("no certificate").waitFor();
    // Renew: ACME is off on this server, said in place.
    await page.getByRole("button", { name: "Renew www.example.test" }).click();
    await www.getByRole("alert").filter({ hasText: "ACME is off on this server" }).waitFor();
    // A user's certificate: the certificate pasted, a key that is not its own refused, then the right key
    // read from a file.
    await page.getByLabel("Domain", { exact: true }).fill("shop.example.test");
    await page.getByLabel("Certificate (PEM)", { exact: true }).fill(`${LEAF}\n${CA}\n`);
    await page.getByLabel("Private key (PEM)", { exact: true }).fill(OTHER_KEY);
    await page.getByRole("button", { name: "Set certificate" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: "The private key does not match the certificate." })
      .waitFor();
    await page.getByLabel("Private key (PEM) file").setInputFiles({
      name: "shop.key",
      mimeType: "application/x-pem-file",
      buffer: Buffer.from(LEAF_KEY),
    });
    // The file is read in the browser (File.text(), asynchronous): its text fills the field.
    await page.waitForFunction(
      (key) => (document.getElementById("key-pem") as HTMLTextAreaElement | null)?.value === key,
      LEAF_KEY,
    );
    await page.getByRole("button", { name: "Set certificate" }).click();
    await page.getByText("Certificate set: it serves now.").waitFor();
    const shop = table.locator("tr", { hasText: "shop.example.test" });
    await shop.getByText("issued").waitFor();
    await shop.getByText("your own").waitFor();
    await shop.getByText("Fixture CA").waitFor();
    assert.match((await shop.textContent()) ?? "", /2126/, "the expiry (2126) is shown");
    await shop.getByText(/^\(in \d+ days\)$/).waitFor();
    type DomainJson = { name: string; state: string; source: string; notAfter: string | null };
    const listed = await pier.cliJson<DomainJson[]>(["domain", "--app", "web"]);
    assert.deepEqual(listed.map((d) => [d.name, d.state, d.source]).sort(), [
      ["shop.example.test", "issued", "user"],
      ["www.example.test", "pending", "acme"],
    ]);
    await shot("domains");
    // Information shows the HTTPS URL of each domain.
    await page.getByRole("link", { name: "Information" }).click();
    const https = page.getByTestId("https-urls");
    await https.getByRole("link", { name: `https://shop.example.test:${pier.httpsPort}` }).waitFor();
    await https.getByText(/certificate until .*2126/).waitFor();
    // Remove: gone from the page and from `pier domain`.
    await page.getByRole("link", { name: "Domains" }).click();
    await page.getByRole("button", { name: "Remove www.example.test" }).click();
    await www.waitFor({ state: "detached" });
    assert.deepEqual(
      (await pier.cliJson<DomainJson[]>(["domain", "--app", "web"])).map((d) => d.name),
      ["shop.example.test"],
    );
  });

  test("an add-on linked at creation (Applications screen) and from Service Dependencies (add)", async () => {
    await pier.cliJson(["create", "--type", "docker", "worker"]);
    await go("");
    await page.getByRole("link", { name: "Create an add-on" }).click();
    // Every kind is offered, each with what it is.
    await page.getByRole("radio", { name: /^postgresql: PostgreSQL 17/ }).waitFor();
    await page.getByRole("radio", { name: /^mysql: MariaDB 11\.8 \(MySQL protocol\)/ }).waitFor();
    await page.getByRole("radio", { name: /^fs: a file-system bucket/ }).waitFor();
    await page.getByRole("radio", { name: /^kv/ }).check();
    await page.getByLabel("Name").fill("cache");
    await page.getByRole("button", { name: "Next: applications" }).click();
    await page.getByRole("heading", { name: "Applications" }).waitFor();
    const toggle = page.getByRole("switch", { name: "Link web" });
    assert.equal(await toggle.getAttribute("aria-checked"), "false");
    await toggle.click();
    assert.equal(await toggle.getAttribute("aria-checked"), "true");
    assert.equal(
      await page.getByRole("switch", { name: "Link worker" }).getAttribute("aria-checked"),
      "false",
    );
    await shot("addon-applications");
    await page.getByRole("button", { name: "Finish: create the add-on" }).click();
    await page.getByTestId("addons").getByText("linked to web").waitFor({ timeout: 90_000 });
    const links = async () =>
      (await pier.api("GET", "/v1/apps/web/links")).json as {
        addons: { name: string }[];
        apps: { name: string }[];
      };
    assert.deepEqual(
      (await links()).addons.map((a) => a.name),
      ["cache"],
    );
    await shot("apps");
    // Service Dependencies: unlink, then link again with add; link an application too.
    await go("apps/web/dependencies");
    const linked = page.getByTestId("linked-addons");
    await linked.getByText("cache").waitFor();
    await page.getByRole("button", { name: "Unlink cache" }).click();
    await page.getByText("No add-on linked.").waitFor();
    assert.deepEqual((await links()).addons, []);
    await page.getByLabel("Add-on", { exact: true }).selectOption("cache");
    await page.getByRole("button", { name: "add", exact: true }).first().click();
    await linked.getByText("cache").waitFor();
    await page.getByLabel("Application", { exact: true }).selectOption("worker");
    await page.getByRole("button", { name: "add", exact: true }).last().click();
    await page.getByTestId("linked-apps").getByText("worker").waitFor();
    const now = await links();
    assert.deepEqual(
      now.addons.map((a) => a.name),
      ["cache"],
    );
    assert.deepEqual(
      now.apps.map((a) => a.name),
      ["worker"],
    );
    await shot("dependencies");
    // worker publishes a variable (a CC_ name is refused inline): web, linked to worker, gets it.
    await go("apps/worker/dependencies");
    await page.getByLabel("Published variable name").fill("CC_RUN_COMMAND");
    await page.getByText("may not start with CC_").waitFor();
    await page.getByLabel("Published variable name").fill("WORKER_QUEUE");
    await page.getByLabel("Published variable value").fill("jobs");
    await page.getByRole("button", { name: "Publish" }).click();
    await page.getByTestId("published").getByText("WORKER_QUEUE=jobs").waitFor();
    // The links' variables show, read-only, with their source; the token is masked until revealed.
    await go("apps/web/variables");
    const table = page.getByTestId("linked-vars");
    await table.getByText("KV_TOKEN").waitFor();
    assert.match(
      (await table.locator("tr", { hasText: "WORKER_QUEUE" }).textContent()) ?? "",
      /jobsapp worker$/,
    );
    const tokenRow = table.locator("tr", { hasText: "KV_TOKEN" });
    assert.match((await tokenRow.textContent()) ?? "", /\*\*\*\*add-on cache$/);
    await shot("variables-linked");
    await page.getByRole("button", { name: "Reveal secrets" }).click();
    assert.doesNotMatch((await tokenRow.textContent()) ?? "", /\*\*\*\*/);
  });

  test("runtime logs follow live; instances show their restarts", async () => {
    await go("apps/web/logs");
    const instances = page.getByTestId("instances");
    await instances.locator("tbody tr").first().getByText("running").waitFor();
    assert.match((await instances.locator("tbody tr").first().textContent()) ?? "", /running.*0none$/);
    await page.getByTestId("runtime-log").getByText("listening on 8080").first().waitFor();
    await page.getByText("live", { exact: true }).waitFor();
    assert.equal((await pier.get("web", "/say/from-the-browser-test")).status, 200);
    await page.getByTestId("runtime-log").getByText("said from-the-browser-test").waitFor();
    // An instance that crashes is restarted: the page shows the restart and the exit code, by itself.
    await pier.get("web", "/crash").catch(() => undefined);
    await instances.getByText(/^code 3 at /).waitFor({ timeout: 30_000 });
    assert.match(
      (await instances.locator("tr", { hasText: "code 3" }).textContent()) ?? "",
      /running.*1code 3/,
    );
    // ...and the log follows the restarted instance: its new start shows.
    await page.waitForFunction(
      () =>
        (document.querySelector("[data-testid=runtime-log]")?.textContent ?? "").split(
          "[0] listening on 8080",
        ).length >= 3,
      null,
      { timeout: 20_000 },
    );
    await shot("logs");
    // pier server restarts (the app keeps serving): the page reconnects by itself, no reload.
    await pier.stopServer();
    await pier.start();
    assert.equal((await pier.get("web", "/say/after-the-restart")).status, 200);
    await page.getByTestId("runtime-log").getByText("said after-the-restart").waitFor({ timeout: 30_000 });
  });

  test("at a phone's width (390 px) the pages have no horizontal scroll", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const hash of [
      "",
      "apps/web/information",
      "apps/web/variables",
      "apps/web/deployments",
      "apps/web/domains",
      "apps/web/logs",
      "new-app",
      "new-addon",
    ]) {
      await go(hash);
      await page.getByRole("button", { name: "Sign out" }).waitFor();
      await page.waitForTimeout(400);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      // What sticks out, to say where the layout breaks.
      const wide = await page.evaluate(() =>
        [...document.querySelectorAll("body *")]
          .filter((e) => e.getBoundingClientRect().right > 391)
          .slice(0, 5)
          .map((e) => `${e.tagName.toLowerCase()}.${e.className}`),
      );
      assert.ok(width <= 390, `#/${hash} is ${width} px wide: ${wide.join(", ")}`);
    }
    await go("apps/web/deployments");
    await page.getByTestId("deploy-log").getByText("Response from GET / is 200").waitFor();
    await shot("phone-deployments");
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  test("a token scoped to one app sees that app only, and its add-on", async () => {
    const scoped = await pier.cliJson<{ token: string }>(["tokens", "create", "web-only", "--app", "web"]);
    await go("");
    await signOut();
    await signIn(scoped.token);
    assert.equal(await page.getByTestId("who").textContent(), "web-only (app web)");
    const apps = page.getByTestId("apps");
    await apps.getByText("web", { exact: true }).waitFor();
    assert.equal(await apps.locator("tbody tr").count(), 1, "worker is not listed");
    assert.equal(await page.getByRole("link", { name: "Create an app" }).count(), 0);
    await page.getByTestId("addons").getByText("cache").waitFor();
    await shot("scoped-token");
    // Domains: listed, but adding one or setting a certificate is the admin's (the API refuses it): said.
    await go("apps/web/domains");
    await page.getByTestId("domains").getByText("shop.example.test").waitFor();
    await page.getByTestId("domains-admin-only").waitFor();
    assert.equal(await page.getByRole("button", { name: "Add domain" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: "Set certificate" }).count(), 0);
    await go("apps/worker/information");
    await page.getByRole("alert").filter({ hasText: "No app named or numbered 'worker'" }).waitFor();
    await signOut();
    // A read-only token: the same pages, no control that changes anything.
    const auditor = await pier.cliJson<{ token: string }>(["tokens", "create", "auditor", "--read-only"]);
    await signIn(auditor.token);
    assert.equal(await page.getByTestId("who").textContent(), "auditor (admin, read-only)");
    await page.getByTestId("apps").getByRole("link", { name: "worker", exact: true }).waitFor();
    assert.equal(await page.getByTestId("apps").locator("tbody tr").count(), 2);
    assert.equal(await page.getByRole("link", { name: "Create an app" }).count(), 0);
    await go("apps/web/variables");
    await page.getByLabel("Variable name 1").waitFor();
    assert.equal(await page.getByRole("button", { name: "Update Changes" }).count(), 0);
    assert.equal(await page.getByLabel("Variable value 1").getAttribute("readonly"), "");
    // Secret values reach a read-only token masked, with no Reveal (ADR 0024).
    await page.getByTestId("secrets-masked").waitFor();
    assert.equal(await page.getByRole("button", { name: /^Reveal/ }).count(), 0);
    const linkedToken = page.getByTestId("linked-vars").locator("tr", { hasText: "KV_TOKEN" });
    assert.match((await linkedToken.textContent()) ?? "", /\*\*\*\*add-on cache$/);
    const kv = await pier.cliJson<Record<string, string>>(["addon", "env", "cache", "--reveal"]);
    assert.ok((kv.KV_TOKEN ?? "").length >= 8);
    assert.ok(
      !(await page.content()).includes(kv.KV_TOKEN ?? "?"),
      "the add-on's token never reaches the page",
    );
    await go("apps/web/deployments");
    await page.getByTestId("deployments").waitFor();
    assert.equal(await page.getByRole("button", { name: "Restart" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: /Roll back/ }).count(), 0);
    await signOut();
    // A 403 on a stale page: the page was drawn for an admin token, and the tab's token is now the read-only
    // one (signed in again in this tab, as another person). A write answers 403: its message shows where
    // the action was made, and the page stays signed in.
    await signIn(adminToken());
    await go("apps/web/deployments");
    await page.getByRole("button", { name: "Restart" }).waitFor();
    await page.evaluate((t) => sessionStorage.setItem("pierToken", t), auditor.token);
    await page.getByRole("button", { name: "Restart" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: "The token 'auditor' is read-only: it may not POST /v1/apps/web/deployments." })
      .waitFor();
    await go("apps/web/variables");
    await page.getByLabel("Variable name 1").waitFor();
    await page.getByRole("button", { name: "Add a variable" }).click();
    await page.getByLabel("Variable name 3").fill("DENIED");
    await page.getByLabel("Variable value 3").fill("x");
    await page.getByRole("button", { name: "Update Changes" }).click();
    await page.getByRole("alert").filter({ hasText: "is read-only: it may not PATCH" }).waitFor();
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    assert.equal((await pier.cliJson<Record<string, string>>(["env", "--app", "web"])).DENIED, undefined);
    await signOut();
  });

  test("keyboard: Tab moves through real controls and the focused one is outlined", async () => {
    await signIn(adminToken());
    await go("apps/web/information");
    await page.getByTestId("information").waitFor();
    const seen: string[] = [];
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press("Tab");
      const f = await page.evaluate(() => {
        const e = document.activeElement as HTMLElement | null;
        return e
          ? {
              tag: e.tagName.toLowerCase(),
              text: e.textContent ?? "",
              outline: getComputedStyle(e).outlineStyle,
            }
          : null;
      });
      assert.ok(f, "something has the focus");
      assert.ok(["a", "button", "input", "select", "textarea", "pre"].includes(f.tag), `focus on a ${f.tag}`);
      assert.equal(f.outline, "solid", `the focused ${f.tag} "${f.text}" is outlined`);
      seen.push(f.text);
    }
    assert.ok(seen.includes("Deployments"), `the tabs are reached: ${seen.join(" | ")}`);
    assert.ok(seen.includes("Copy"), "the copy buttons are reached");
  });

  test("tasks: an app created with its task command; another switched to a task; delete with the name typed", async () => {
    await go("new-app");
    await page.getByLabel("Name").fill("nightly");
    await page.getByLabel("Runtime type").selectOption("phpserver");
    await page.getByLabel(/A task/).check();
    await page.getByLabel("Task command").fill("phpserver php-cli task.php");
    await page.getByRole("button", { name: "Create app" }).click();
    await page.waitForURL(/#\/apps\/nightly\/information$/);
    await page.getByText("This app is a task: each deploy runs").waitFor();
    await page.getByText("phpserver php-cli task.php").waitFor();
    const nightly = (
      await pier.cliJson<{ name: string; task: string | null; flavor: string }[]>(["apps"])
    ).find((a) => a.name === "nightly");
    assert.equal(nightly?.task, "phpserver php-cli task.php");
    assert.equal(nightly?.flavor, "XS", "a phpserver app's default flavor");
    // The task setting of an app that serves HTTP: CC_TASK, from its Information panel.
    await go("apps/worker/information");
    await page.getByRole("button", { name: "Run as a task" }).click();
    await page.getByText("Saved: applies at the next deploy or restart.").waitFor();
    await page.getByRole("button", { name: "Serve HTTP instead" }).waitFor();
    // worker has no release: what it is now, then what its first deploy makes it (the variable).
    assert.equal(await page.getByTestId("task-now").textContent(), "This app has no release yet.");
    await page
      .getByTestId("task-next")
      .getByText(/^Its first deploy runs it as a task \(CC_TASK=true\)/)
      .waitFor();
    assert.equal((await pier.cliJson<Record<string, string>>(["env", "--app", "worker"])).CC_TASK, "true");
    // Delete: the button waits for the app's name.
    await go("apps/nightly/information");
    const del = page.getByRole("button", { name: "Delete app" });
    await del.waitFor();
    assert.equal(await del.isDisabled(), true);
    await page.getByLabel("Type nightly to confirm").fill("nightl");
    assert.equal(await del.isDisabled(), true);
    await page.getByLabel("Type nightly to confirm").fill("nightly");
    await del.click();
    await page.waitForURL(/#\/$/);
    await page.getByTestId("apps").getByRole("link", { name: "web", exact: true }).waitFor();
    assert.equal(
      await page.getByTestId("apps").getByRole("link", { name: "nightly", exact: true }).count(),
      0,
    );
    const left = await pier.cliJson<{ name: string }[]>(["apps"]);
    assert.deepEqual(
      left.map((a) => a.name),
      ["web", "worker"],
    );
  });

  test("the page logged no error (no CSP violation, no exception)", () => {
    const real = pageErrors.filter(
      (e) =>
        // 4xx answers the tests asked for (a refused certificate is a 422), and the connections cut or
        // refused while pier server restarted.
        !/Failed to load resource: (the server responded with a status of 4[0-9]{2}|net::ERR_(CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE|INCOMPLETE_CHUNKED_ENCODING))/.test(
          e,
        ),
    );
    assert.deepEqual(real, []);
  });
});
