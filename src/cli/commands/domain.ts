import { readFile } from "node:fs/promises";
import { z } from "zod";
import {
  APP,
  checkFlags,
  FORMAT,
  HELP,
  humanJson,
  parseFlags,
  subcommand,
  takePositionals,
} from "../args.js";
import type { Command, Context } from "../command.js";
import { CliError, UsageError } from "../errors.js";
import { resolveApp } from "../link-file.js";
import { json, table } from "../output.js";
import type { CliReplyOf } from "../schemas.js";

type DomainView = CliReplyOf<"GET /v1/apps/:app/domains">[number];

const USAGE = `Usage: pier domain [--app A] [--format human|json]
       pier domain add NAME [--app A]
       pier domain rm NAME [--app A]
       pier domain renew NAME [--acme] [--app A]
       pier domain cert set NAME --cert FILE --key FILE [--app A]

  An app answers at <app>.<PIER_DOMAIN>, and at its custom domains: point the domain's DNS at this host,
  then add it. Pier routes it at once (HTTP and HTTPS) and obtains its certificate from the ACME server
  (PIER_ACME_DIRECTORY, Let's Encrypt by default; HTTP-01 on the HTTP port, which must be port 80 from
  the Internet). Certificates are renewed by themselves 30 days before they expire (a third of their
  lifetime for short ones), with retries; a failed renewal keeps the current certificate serving.
  A domain belongs to one app. An app's CC_FORCE_HTTPS=true redirects its HTTP requests to HTTPS.

  (none)      the app's domains: certificate state, issuer, expiry, next renewal, last error
  add         adds a domain to the app (refused when another app has it)
  rm          removes the domain and its certificate
  renew       obtains a new certificate now (the current one serves until the new one is installed);
              --acme switches a domain with your own certificate to one from the ACME server
  cert set    serves your own certificate (PEM: the certificate then its chain; an unencrypted key);
              checked against the key and the name. Pier does not renew it.

Options:
  -a, --app <name|id>          the app (default: the one in .pier.json, searched upwards from here)
      --cert <file>            the certificate chain (cert set)
      --key <file>             its private key (cert set)
      --format human|json      output format (default human)
  -h, --help                   show this help
`;

const day = (iso: string | null) => (iso ? iso.slice(0, 10) : "");

function describe(d: DomainView): string {
  const state =
    d.state === "issued"
      ? `certificate from ${d.issuer ?? "?"} (${d.source}), expires ${day(d.notAfter)}`
      : d.state === "pending"
        ? "obtaining a certificate"
        : "no certificate";
  return `${d.name}: ${state}`;
}

async function readPem(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (e) {
    throw new CliError(`cannot read the ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

interface DomainFlags {
  app?: string;
  cert?: string;
  key?: string;
  acme?: boolean;
}

interface Sub {
  ctx: Context;
  rest: string[];
  values: DomainFlags;
  format: "human" | "json";
}

/** One domain: its JSON, or the human line. */
const shown = ({ ctx, format }: Sub, d: DomainView, line: string) =>
  ctx.out(format === "json" ? json(d) : `${line}\n`);

async function list({ ctx, rest, values, format }: Sub): Promise<number> {
  takePositionals("domain", rest, 0, 0, "");
  const app = resolveApp(values.app, ctx.cwd, "domain");
  const all = await ctx.client().call("GET /v1/apps/:app/domains", { params: { app: app.ref } });
  if (format === "json") ctx.out(json(all));
  else if (all.length === 0) ctx.err("No custom domains. Add one with: pier domain add NAME\n");
  else
    ctx.out(
      table(
        ["DOMAIN", "STATE", "SOURCE", "ISSUER", "EXPIRES", "NEXT RENEWAL", "LAST ERROR"],
        all.map((d) => [
          d.name,
          d.state,
          d.source,
          d.issuer ?? "",
          day(d.notAfter),
          d.nextAttemptAt ?? "",
          d.lastError ?? "",
        ]),
      ),
    );
  return 0;
}

async function add(sub: Sub): Promise<number> {
  const { ctx, rest, values } = sub;
  const [name] = takePositionals("domain", rest, 1, 1, "the domain NAME: pier domain add www.example.com");
  const app = resolveApp(values.app, ctx.cwd, "domain");
  const d = await ctx.client().call("POST /v1/apps/:app/domains", {
    params: { app: app.ref },
    body: { name: name as string },
  });
  shown(sub, d, `Added ${d.name} to ${d.app}: ${d.url} once its certificate is obtained (see pier domain).`);
  return 0;
}

async function remove({ ctx, rest, values }: Sub): Promise<number> {
  const [name] = takePositionals("domain", rest, 1, 1, "the domain NAME");
  const app = resolveApp(values.app, ctx.cwd, "domain");
  await ctx.client().call("DELETE /v1/apps/:app/domains/:domain", {
    params: { app: app.ref, domain: name as string },
  });
  ctx.out(`Removed ${name} from ${app.ref}.\n`);
  return 0;
}

async function renew(sub: Sub): Promise<number> {
  const { ctx, rest, values } = sub;
  const [name] = takePositionals("domain", rest, 1, 1, "the domain NAME");
  const app = resolveApp(values.app, ctx.cwd, "domain");
  ctx.err(`Obtaining a new certificate for ${name}...\n`);
  const d = await ctx.client().call("POST /v1/apps/:app/domains/:domain/renew", {
    params: { app: app.ref, domain: name as string },
    query: { acme: values.acme },
  });
  shown(sub, d, `Renewed: ${describe(d)}, serial ${d.serial ?? "?"}.`);
  return 0;
}

async function certSet({ ctx, rest, values, format }: Sub): Promise<number> {
  const [op, ...more] = rest;
  if (op !== "set")
    throw new UsageError(`unknown domain cert command '${op ?? ""}' (expected set)`, { command: "domain" });
  const [name] = takePositionals(
    "domain",
    more,
    1,
    1,
    "the domain NAME: pier domain cert set NAME --cert F --key F",
  );
  if (!values.cert || !values.key)
    throw new UsageError("--cert FILE and --key FILE are both needed", { command: "domain" });
  const app = resolveApp(values.app, ctx.cwd, "domain");
  const body = { cert: await readPem(values.cert, "certificate"), key: await readPem(values.key, "key") };
  const d = await ctx.client().call("PUT /v1/apps/:app/domains/:domain/certificate", {
    params: { app: app.ref, domain: name as string },
    body,
  });
  if (format === "json") ctx.out(json(d));
  else
    ctx.out(
      `${describe(d)}.\nPier does not renew a certificate you set: set the next one before it expires.\n`,
    );
  return 0;
}

const SUBCOMMANDS: Record<string, (sub: Sub) => Promise<number>> = {
  list,
  add,
  rm: remove,
  renew,
  cert: certSet,
};

export const domain: Command = {
  name: "domain",
  summary: "An app's custom domains and their HTTPS certificates: list, add, rm, renew, cert set",
  help: USAGE,
  async run(args, ctx) {
    const { values, positionals } = parseFlags("domain", args, {
      ...HELP,
      ...APP,
      ...FORMAT,
      cert: { type: "string" },
      key: { type: "string" },
      acme: { type: "boolean" },
    });
    const [sub = "list", ...rest] = positionals;
    const { format } = checkFlags(`domain ${sub}`, z.object({ format: humanJson }), {
      format: values.format,
    });
    const handler = subcommand("domain", SUBCOMMANDS, sub, "add, rm, renew, cert set");
    return handler({ ctx, rest, values, format });
  },
};
