import type { Logger } from "pino";
import type { NodeVersion } from "../../core/node-versions.js";
import type { Store } from "../../core/ports.js";
import type { AddonService } from "../addons.js";
import type { AppService } from "../apps.js";
import type { DeployLogs } from "../deploy-logs.js";
import type { DomainService } from "../domains.js";
import type { AppLimits } from "../limits.js";
import type { NodeService } from "../nodes.js";

/** What the API's handlers work with (wired in main.ts). */
export interface ApiDeps {
  store: Store;
  apps: AppService;
  addons: AddonService;
  /** Custom domains and certificates (ADR 0018). */
  domains: DomainService;
  logs: DeployLogs;
  /** The swarm's machines (ADR 0030); on one dockerd every call answers NO_SWARM. */
  nodes: NodeService;
  /** Each app's ceiling and the caps on variables (ADR 0022). */
  limits: AppLimits;
  logger: Logger;
  nodeVersions: () => Promise<NodeVersion[]>;
  info: {
    version: string;
    domain: string;
    httpPort: number;
    httpsPort: number;
    sshPort: number;
    gitHost: string;
  };
  /** How often a followed stream sends a comment while it is quiet (20 s; shorter in tests). */
  keepAliveMs?: number;
  /** PIER_API_MAX_BODY. */
  maxBodyBytes: number;
  /**
   * Check every answer against the route table and turn one that differs into a 500 naming the difference
   * (ADR 0026): on in the unit tests.
   */
  checkAnswers?: boolean;
}
