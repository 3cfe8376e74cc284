// `forkd sim`: the Anthropic API simulator as a process. The first stdout line is its URL.
import { type SimOptions, startSim } from "@forkd/sim";
import type { CommandContext } from "../context.js";
import { UsageError } from "../errors.js";
import { whenAborted } from "../interrupt.js";
import { writeLine } from "../io.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine, parseInteger } from "../options.js";
import { LATENCY_FLAGS, latencyOf } from "../sim-latency.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  port: { type: "string" },
  host: { type: "string" },
  ...LATENCY_FLAGS,
  log: { type: "string" },
  json: { type: "boolean" },
} as const;

/** Serves until SIGINT/SIGTERM. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("sim", args, OPTIONS);
  expectPositionals("sim", positionals, { min: 0, max: 0, names: "" });
  const options: SimOptions = {};
  if (values.port !== undefined) options.port = parseInteger("port", values.port, { min: 0, max: 65535 });
  if (values.host !== undefined) options.host = values.host;
  options.latency = latencyOf(values);
  if (values.log !== undefined) options.logFile = values.log;
  const stop = context.interruption.signal;
  let sim: Awaited<ReturnType<typeof startSim>>;
  try {
    sim = await startSim(options);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL") {
      throw new UsageError(`cannot listen on ${options.host ?? "127.0.0.1"}:${options.port ?? 0}: ${code}`, {
        cause: error,
      });
    }
    throw error;
  }
  writeLine(context.io.stdout, values.json ? JSON.stringify({ url: sim.url, port: sim.port }) : sim.url);
  await whenAborted(stop);
  await sim.close();
  return 0;
}
