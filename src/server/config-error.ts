/** Pier's settings are invalid: every problem found, each naming its setting. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Pier's settings are invalid:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}
