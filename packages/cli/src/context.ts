// What every command gets besides its arguments.
import { readFileSync } from "node:fs";
import type { Interruption } from "./interrupt.js";
import type { CliIo } from "./io.js";

/** The environment a command runs in. */
export interface CommandContext {
  readonly io: CliIo;
  /** Ctrl-C and SIGTERM, as an AbortSignal (handlers installed on first use). */
  readonly interruption: Interruption;
  /** `--verbose` was given. */
  readonly verbose: boolean;
  /** The CLI's version. */
  readonly version: string;
}

/** A command: parses its arguments, does its work, returns the exit code; throws a CliError to fail. */
export type Command = (args: string[], context: CommandContext) => Promise<number>;

let cachedVersion: string | undefined;

/** The version in @forkd/cli's package.json. */
export function cliVersion(): string {
  if (cachedVersion === undefined) {
    try {
      const text = readFileSync(new URL("../package.json", import.meta.url), "utf8");
      cachedVersion = String((JSON.parse(text) as { version?: unknown }).version ?? "0.0.0");
    } catch {
      cachedVersion = "0.0.0";
    }
  }
  return cachedVersion;
}
