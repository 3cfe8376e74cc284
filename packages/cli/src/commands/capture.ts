// `forkd capture DIR`: `forkd proxy` that also writes each turn as a parent-turn file for `forkd fork --from`.
import type { CommandContext } from "../context.js";
import { serveProxy } from "./proxy.js";

/** `forkd capture`. */
export function run(args: string[], context: CommandContext): Promise<number> {
  return serveProxy("capture", args, context);
}
