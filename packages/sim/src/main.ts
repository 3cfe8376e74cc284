#!/usr/bin/env node
/**
 * `forkd-sim`: runs the simulator as a process. Prints the URL as the first line of stdout
 * (or `{"url":…,"port":…}` with --json) and runs until SIGINT/SIGTERM.
 */
import { parseArgs } from "node:util";
import { SimOptionsError } from "./errors.js";
import { type SimOptions, startSim } from "./server.js";

const USAGE = `usage: forkd-sim [options]

  --port <n>            port to listen on (default 0: any free port)
  --host <addr>         address to listen on (default 127.0.0.1)
  --json                print {"url":…,"port":…} instead of the bare URL
  --ttft <ms>           time to first token of every request (default 0)
  --tps <n>             output tokens per second (default 0: no pacing)
  --fault-rate <p>      probability of a random fault per request, 0..1 (default 0)
  --fault-seed <n>      seed of the fault generator (default 1)
  --fault <spec>        a fault to draw from (repeatable), e.g. "429 retry-after=1", "529", "cut-after=20"
  --log-file <path>     append the request log as JSON lines
  --log-limit <n>       entries kept in memory (default 500)
  --api-key <key>       accept only this key (repeatable; default: any key)
  --min-cache <m>=<n>   minimum cacheable tokens for models starting with m (repeatable)
  -h, --help            this text`;

function number(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n))
    throw new SimOptionsError([`${flag}: not a number: ${value}`]);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: "string" },
      host: { type: "string" },
      json: { type: "boolean", default: false },
      ttft: { type: "string" },
      tps: { type: "string" },
      "fault-rate": { type: "string" },
      "fault-seed": { type: "string" },
      fault: { type: "string", multiple: true },
      "log-file": { type: "string" },
      "log-limit": { type: "string" },
      "api-key": { type: "string", multiple: true },
      "min-cache": { type: "string", multiple: true },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const options: SimOptions = {};
  const port = number(values.port, "--port");
  if (port !== undefined) options.port = port;
  if (values.host !== undefined) options.host = values.host;
  const ttft = number(values.ttft, "--ttft");
  const tps = number(values.tps, "--tps");
  if (ttft !== undefined || tps !== undefined) {
    options.latency = { ttftMs: ttft, tokensPerSecond: tps };
  }
  const rate = number(values["fault-rate"], "--fault-rate");
  if (rate !== undefined) {
    const seed = number(values["fault-seed"], "--fault-seed");
    options.faults = { rate, seed, kinds: values.fault };
  }
  if (values["log-file"] !== undefined) options.logFile = values["log-file"];
  const limit = number(values["log-limit"], "--log-limit");
  if (limit !== undefined) options.logLimit = limit;
  if (values["api-key"] !== undefined) options.apiKeys = values["api-key"];
  if (values["min-cache"] !== undefined) {
    const table: Record<string, number> = {};
    for (const pair of values["min-cache"]) {
      const eq = pair.lastIndexOf("=");
      const n = number(pair.slice(eq + 1), "--min-cache");
      if (eq <= 0 || n === undefined)
        throw new SimOptionsError([`--min-cache: expected <model prefix>=<tokens>, got ${pair}`]);
      table[pair.slice(0, eq)] = n;
    }
    options.minCacheableTokens = table;
  }
  const sim = await startSim(options);
  process.stdout.write(
    values.json ? `${JSON.stringify({ url: sim.url, port: sim.port })}\n` : `${sim.url}\n`,
  );
  const stop = (): void => {
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`forkd-sim: ${err instanceof Error ? err.message : String(err)}\n`);
  if (!(err instanceof SimOptionsError)) process.stderr.write(`${USAGE}\n`);
  process.exit(2);
});
