// Signing in to the web console in a browser, as a user does: the token typed into its field, Enter.
// Shared by the console's own e2e file and the swarm's (test/e2e-swarm/status-swarm.test.ts).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import type { Pier } from "./harness.js";

/** The admin token `pier server` wrote for its CLI. */
export const adminToken = (pier: Pier): string =>
  (JSON.parse(readFileSync(join(pier.dataDir, "cli.json"), "utf8")) as { token: string }).token;

/** Opens the console at `base` and signs in with `token`, with the keyboard; returns once signed in. */
export async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(base);
  await page.getByLabel("API token").focus();
  await page.keyboard.type(token);
  await page.keyboard.press("Enter");
  await page.getByRole("button", { name: "Sign out" }).waitFor();
}
