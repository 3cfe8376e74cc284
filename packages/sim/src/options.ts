// What startSim accepts: the options, the schema that refuses those that cannot work, and the
// settings they resolve to once checked and defaulted.
import { z } from "zod";
import { type Clock, systemClock } from "./clock.js";
import { SimOptionsError } from "./errors.js";
import { type FaultRateOptions, type FaultSpec, parseFault } from "./faults.js";

/** Latency applied to every `/v1/messages` request unless its script says otherwise. */
export interface LatencyOptions {
  /** Time to first token (before `message_start`, or before the whole non-streaming body). @default 0 @unit milliseconds */
  ttftMs?: number | undefined;
  /** Output speed; 0 means as fast as possible. @default 0 @unit tokens per second */
  tokensPerSecond?: number | undefined;
}

/** Random faults at a rate (seeded, deterministic in request order). */
export interface SimFaultOptions {
  /** Probability that a `/v1/messages` request gets a fault, 0..1. */
  rate: number;
  /** @default 1 */
  seed?: number | undefined;
  /** Faults to choose from, as objects or as written in scripts (`"429 retry-after=1"`). @default 429, 529, 500 */
  kinds?: ReadonlyArray<FaultSpec | string> | undefined;
}

/** Options of {@link startSim}. */
export interface SimOptions {
  /** @default 0 (any free port) */
  port?: number;
  /** @default "127.0.0.1" */
  host?: string;
  latency?: LatencyOptions | undefined;
  faults?: SimFaultOptions;
  /** Append the request log here as JSON lines. */
  logFile?: string;
  /** Log entries kept in memory, bodies included (mind the memory with large prompts). @default 500 */
  logLimit?: number;
  /** Clock of the prompt cache (TTLs). @default the system clock */
  clock?: Clock;
  /** Accept only these API keys (others get 401). @default any non-empty key */
  apiKeys?: readonly string[];
  /** Maps an API key to its cache scope (keys of one workspace share entries). @default every key its own scope */
  cacheScope?: (apiKey: string) => string;
  /** Minimum cacheable tokens by model name prefix, checked before the built-in table. */
  minCacheableTokens?: Readonly<Record<string, number>>;
  /** Cache lookback window. @default 20 @unit blocks */
  lookbackBlocks?: number;
  /** Largest request body. @default 33554432 (32 MiB) @unit bytes */
  maxBodyBytes?: number;
}

/** The schema of {@link SimOptions}: startSim refuses options that fail it. */
export const optionsSchema = z
  .object({
    port: z.number().int().min(0).max(65535).optional(),
    host: z.string().min(1).optional(),
    latency: z
      .object({ ttftMs: z.number().min(0).optional(), tokensPerSecond: z.number().min(0).optional() })
      .strict()
      .optional(),
    faults: z
      .object({
        rate: z.number().min(0).max(1),
        seed: z.number().int().optional(),
        kinds: z.array(z.union([z.string(), z.object({ kind: z.string() }).passthrough()])).optional(),
      })
      .strict()
      .optional(),
    logFile: z.string().min(1).optional(),
    logLimit: z.number().int().min(0).optional(),
    clock: z
      .custom<Clock>((v) => typeof (v as Clock | undefined)?.now === "function", "clock must have now()")
      .optional(),
    apiKeys: z.array(z.string().min(1)).optional(),
    cacheScope: z
      .custom<(k: string) => string>((v) => typeof v === "function", "cacheScope must be a function")
      .optional(),
    minCacheableTokens: z.record(z.string(), z.number().int().min(0)).optional(),
    lookbackBlocks: z.number().int().min(0).optional(),
    maxBodyBytes: z.number().int().min(1).optional(),
  })
  .strict();

/** {@link SimOptions} checked, with their defaults applied and fault kinds parsed. */
export interface SimSettings {
  port: number;
  host: string;
  clock: Clock;
  /** @unit milliseconds */
  ttftMs: number;
  /** @unit tokens per second */
  tokensPerSecond: number;
  /** @unit bytes */
  maxBodyBytes: number;
  /** The rate faults, when any were asked for. */
  faults: FaultRateOptions | undefined;
}

/**
 * Checks `options` against {@link optionsSchema} and parses the fault kinds written as text.
 * @throws {@link SimOptionsError} naming every problem found.
 */
export function resolveOptions(options: SimOptions): SimSettings {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new SimOptionsError(
      parsed.error.issues.map((i) => `${i.path.join(".") || "options"}: ${i.message}`),
    );
  }
  let kinds: FaultSpec[] | undefined;
  try {
    kinds = options.faults?.kinds?.map((k) => (typeof k === "string" ? parseFault(k) : k));
  } catch (e) {
    throw new SimOptionsError([`faults.kinds: ${(e as Error).message}`], { cause: e });
  }
  return {
    port: options.port ?? 0,
    host: options.host ?? "127.0.0.1",
    clock: options.clock ?? systemClock,
    ttftMs: options.latency?.ttftMs ?? 0,
    tokensPerSecond: options.latency?.tokensPerSecond ?? 0,
    maxBodyBytes: options.maxBodyBytes ?? 32 * 1024 * 1024,
    faults:
      options.faults === undefined
        ? undefined
        : { rate: options.faults.rate, seed: options.faults.seed, kinds },
  };
}
