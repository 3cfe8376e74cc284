/**
 * The HTTP server: `node:http` wired to the parts that decide everything else — the options
 * (options.ts), the routes (routes/), the prompt cache (cache.ts), faults (faults.ts), the
 * exchanges' lifecycle (exchanges.ts), API keys (api-keys.ts), events (sim-events.ts) and the log
 * (log.ts).
 *
 * Routes: `POST /v1/messages`, `POST /v1/messages/count_tokens`, `POST /v1/chat/completions` and
 * `POST /v1/responses` (OpenAI, openai/), `/v1beta/models/{model}:generateContent`,
 * `:streamGenerateContent` and `/v1beta/cachedContents` (Gemini, gemini/), `GET /v1/sim/stats`,
 * `GET /v1/sim/requests`, `POST /v1/sim/reset`, `GET /v1/sim/health`.
 */

import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { minCacheableTokens } from "@forkd/protocol";
import { ApiKeys } from "./api-keys.js";
import { LOOKBACK_BLOCKS, PromptCache } from "./cache.js";
import { CacheDiagnostics } from "./cache-diagnostics.js";
import { SimOptionsError } from "./errors.js";
import { Exchanges } from "./exchanges.js";
import { FaultInjector } from "./faults.js";
import { GeminiCaches } from "./gemini/gemini-cache.js";
import { type GeminiRouteContext, geminiRoute, isGeminiPath } from "./gemini/gemini-route.js";
import { RequestLog, type RequestLogEntry } from "./log.js";
import { OpenAiPromptCache } from "./openai/openai-cache.js";
import { type OpenAiRouteContext, openAiApiOf, openAiRoute } from "./openai/openai-route.js";
import { resolveOptions, type SimOptions } from "./options.js";
import { anthropicRoute } from "./routes/messages.js";
import { simRoute } from "./routes/sim.js";
import { SimEventBus, type SimEvents, type SimStats } from "./sim-events.js";

export type { LatencyOptions, SimFaultOptions, SimOptions } from "./options.js";
export type { AcceptedEvent, DisconnectEvent, FirstByteEvent, SimEvents, SimStats } from "./sim-events.js";

/** A running simulator. */
export interface Sim extends AsyncDisposable {
  /** Base URL, e.g. `http://127.0.0.1:41234` (give it to the SDK as `baseURL`). */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  /** The request log in memory, oldest first. */
  requests(): RequestLogEntry[];
  stats(): SimStats;
  on<K extends keyof SimEvents>(event: K, listener: (e: SimEvents[K]) => void): Sim;
  off<K extends keyof SimEvents>(event: K, listener: (e: SimEvents[K]) => void): Sim;
  /** Resolves with the next event of that kind that passes `filter`; rejects when `signal` aborts. */
  next<K extends keyof SimEvents>(
    event: K,
    options?: { filter?: (e: SimEvents[K]) => boolean; signal?: AbortSignal },
  ): Promise<SimEvents[K]>;
  /** Forgets cache entries, the log in memory, totals and `fault-once` memory. */
  reset(): void;
  /** Stops listening, ends in-flight requests, flushes the log file. */
  close(): Promise<void>;
}

/**
 * Starts a simulator.
 * @throws {SimOptionsError} for options that cannot work
 * @example
 * await using sim = await startSim();
 * const client = new Anthropic({ apiKey: "test", baseURL: sim.url });
 */
export async function startSim(options: SimOptions = {}): Promise<Sim> {
  const settings = resolveOptions(options);
  const cache = new PromptCache({
    clock: settings.clock,
    lookback: options.lookbackBlocks ?? LOOKBACK_BLOCKS,
    minCacheableTokens: (model) => minCacheableTokens(model, options.minCacheableTokens),
  });
  const faults = new FaultInjector(settings.faults);
  const log = await openLog(options);
  const events = new SimEventBus();
  const keys = new ApiKeys(options.apiKeys);
  const exchanges = new Exchanges({ cache, log, events });
  const openAiCache = new OpenAiPromptCache(settings.clock);
  let diagnostics = new CacheDiagnostics();
  const geminiCaches = new GeminiCaches(settings.clock);
  const reset = (): void => {
    cache.clear();
    diagnostics = new CacheDiagnostics();
    openAiCache.clear();
    geminiCaches.clear();
    log.clear();
    faults.clear();
  };
  const stats = (): SimStats => ({ ...log.stats(), cache: cache.stats() });
  const routeContext: OpenAiRouteContext & GeminiRouteContext = {
    openAiCache,
    geminiCaches,
    now: () => settings.clock.now(),
    maxBody: settings.maxBodyBytes,
    authenticate: (ex, key) => keys.authenticate(ex, key),
    cache,
    get diagnostics() {
      return diagnostics;
    },
    faults,
    cacheScope: options.cacheScope,
    ttftMs: settings.ttftMs,
    tokensPerSecond: settings.tokensPerSecond,
    firstByte: (ex, stream) => exchanges.firstByte(ex, stream),
    accepted: (build) => {
      if (events.listening("accepted")) events.emit("accepted", build());
    },
  };
  const simContext = { stats, requests: () => log.entries(), reset };

  const server = await listen(settings, (req, res) => {
    const { ex, url } = exchanges.open(req, res);
    const path = ex.entry.path;
    if (path.startsWith("/v1/sim/")) return simRoute(simContext, ex, path, url);
    exchanges.track(ex);
    const openAiApi = openAiApiOf(path);
    if (isGeminiPath(path)) geminiRoute(routeContext, ex, url);
    else if (openAiApi !== undefined) openAiRoute(routeContext, ex, openAiApi);
    else anthropicRoute(routeContext, ex, path);
  });
  const port = (server.address() as AddressInfo).port;
  const host = settings.host;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      exchanges.abortAll();
      server.closeAllConnections();
      await stopped;
      exchanges.finishAll();
      await log.close();
    })();
    return closed;
  };

  const sim: Sim = {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    host,
    requests: () => log.entries(),
    stats,
    on(event, listener) {
      events.on(event, listener);
      return sim;
    },
    off(event, listener) {
      events.off(event, listener);
      return sim;
    },
    next: (event, opts) => events.next(event, opts),
    reset,
    close,
    [Symbol.asyncDispose]: close,
  };
  return sim;
}

/** The request log, its file (if any) open for appending. @throws {@link SimOptionsError} when the file cannot be written. */
async function openLog(options: SimOptions): Promise<RequestLog> {
  const log = new RequestLog({ file: options.logFile, limit: options.logLimit });
  try {
    await log.ready();
  } catch (e) {
    throw new SimOptionsError([`logFile: cannot write ${options.logFile}: ${(e as Error).message}`], {
      cause: e,
    });
  }
  return log;
}

/** An HTTP server listening on the settings' host and port, keeping idle connections as the API does. */
async function listen(
  settings: { host: string; port: number },
  handle: RequestListener<typeof IncomingMessage, typeof ServerResponse>,
): Promise<ReturnType<typeof createServer>> {
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, handle);
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(settings.port, settings.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return server;
}
