import type { Command } from "../command.js";
import { addon } from "./addon.js";
import { apps } from "./apps.js";
import { cancelDeploy } from "./cancel-deploy.js";
import { create } from "./create.js";
import { del } from "./delete.js";
import { deployments } from "./deployments.js";
import { domain } from "./domain.js";
import { env } from "./env.js";
import { help } from "./help.js";
import { limits } from "./limits.js";
import { link } from "./link.js";
import { logs } from "./logs.js";
import { nodes } from "./nodes.js";
import { publishedConfig } from "./published-config.js";
import { releases, rollback } from "./releases.js";
import { restart } from "./restart.js";
import { runtimes } from "./runtimes.js";
import { scale } from "./scale.js";
import { server } from "./server.js";
import { service } from "./service.js";
import { sshKeys } from "./ssh-keys.js";
import { sshPrivateKey } from "./ssh-private-key.js";
import { status } from "./status.js";
import { stop } from "./stop.js";
import { tokens } from "./tokens.js";

/** Every command, in the order `pier help` lists them. */
export const COMMANDS: readonly Command[] = [
  server,
  create,
  apps,
  status,
  deployments,
  logs,
  restart,
  releases,
  rollback,
  scale,
  limits,
  stop,
  cancelDeploy,
  env,
  domain,
  addon,
  service,
  publishedConfig,
  link,
  nodes,
  sshKeys,
  sshPrivateKey,
  tokens,
  runtimes,
  del,
  help,
];
