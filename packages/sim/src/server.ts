/**
 * The HTTP server: routes, request lifecycle, latency, faults, events. Everything it simulates is
 * decided by the other modules (validate, prompt, cache, model, faults, sse, log); this file wires
 * them to `node:http`.
 *
 * Routes: `POST /v1/messages`, `POST /v1/messages/count_tokens`, `GET /v1/sim/stats`,
 * `GET /v1/sim/requests`, `POST /v1/sim/reset`, `GET /v1/sim/health`.
 */
import { createHash, randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { minCacheableTokens } from "@forkd/protocol";
import { LOOKBACK_BLOCKS, PromptCache } from "./cache.js";
import { hiResNow, systemClock } from "./clock.js";
import { apiErrorBody, SimApiError, SimOptionsError } from "./errors.js";
import { apiKeyOf, type Exchange, GONE, sendJson } from "./exchange.js";
import { FaultInjector, type FaultSpec, parseFault } from "./faults.js";
import { RequestLog, type RequestLogEntry, withoutBody } from "./log.js";
import { optionsSchema, type SimOptions } from "./options.js";
import { countTokensRoute, type MessagesRouteContext, messagesRoute } from "./routes/messages.js";
import type { DisconnectEvent, FirstByteEvent, SimEvents, SimStats } from "./sim-events.js";
import type { Usage } from "./types.js";

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
  const host = options.host ?? "127.0.0.1";
  const clock = options.clock ?? systemClock;
  const ttftDefault = options.latency?.ttftMs ?? 0;
  const tpsDefault = options.latency?.tokensPerSecond ?? 0;
  const maxBody = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const allowedKeys = options.apiKeys === undefined ? undefined : new Set(options.apiKeys);
  const overrides = options.minCacheableTokens;
  const cache = new PromptCache({
    clock,
    lookback: options.lookbackBlocks ?? LOOKBACK_BLOCKS,
    minCacheableTokens: (model) => minCacheableTokens(model, overrides),
  });
  const faults = new FaultInjector(
    options.faults === undefined
      ? undefined
      : { rate: options.faults.rate, seed: options.faults.seed, kinds },
  );
  const log = new RequestLog({ file: options.logFile, limit: options.logLimit });
  try {
    await log.ready();
  } catch (e) {
    throw new SimOptionsError([`logFile: cannot write ${options.logFile}: ${(e as Error).message}`], {
      cause: e,
    });
  }
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const instance = randomBytes(3).toString("hex");
  const keyIds = new Map<string, string>();
  const inFlight = new Set<Exchange>();
  let seq = 0;
  let closing = false;

  /** Emits to listeners; a listener that throws is reported as a process warning, never taken down the server. */
  const emit = <K extends keyof SimEvents>(event: K, payload: SimEvents[K]): void => {
    try {
      events.emit(event, payload);
    } catch (e) {
      process.emitWarning(
        `a "${event}" listener of the simulator threw: ${(e as Error)?.stack ?? String(e)}`,
      );
    }
  };

  const keyIdOf = (key: string): string => {
    let id = keyIds.get(key);
    if (id === undefined) {
      if (keyIds.size > 10_000) keyIds.clear();
      id = `key_${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
      keyIds.set(key, id);
    }
    return id;
  };

  const sendError = (ex: Exchange, err: SimApiError): void => {
    ex.entry.errorType = err.errorType;
    ex.entry.errorMessage = err.message;
    sendJson(ex, err.status, apiErrorBody(err.errorType, err.message, ex.id), { ...err.headers });
  };

  const finish = (ex: Exchange): void => {
    if (ex.logged) return;
    ex.logged = true;
    inFlight.delete(ex);
    const e = ex.entry;
    e.endedAt = hiResNow();
    if (ex.plan !== undefined) cache.abandon(ex.plan); // no-op once committed
    if (ex.inputUsage !== undefined && e.firstByteAt !== null) {
      e.usage = { ...ex.inputUsage, output_tokens: e.outputTokensSent } as Usage;
    }
    log.add(e);
    emit("request", e);
  };

  /** The response starts: cache writes become readable, input is charged. */
  const firstByte = (ex: Exchange, stream: boolean): void => {
    const at = hiResNow();
    ex.entry.firstByteAt = at;
    if (ex.plan !== undefined) cache.commit(ex.plan);
    if (ex.inputUsage !== undefined && events.listenerCount("firstByte") > 0) {
      const e: FirstByteEvent = {
        seq: ex.seq,
        id: ex.id,
        at,
        stream,
        usage: { ...ex.inputUsage, output_tokens: ex.outputTokens } as Usage,
      };
      emit("firstByte", e);
    }
  };

  const authenticate = (ex: Exchange): string => {
    const key = apiKeyOf(ex.req);
    if (key === undefined) throw new SimApiError("authentication_error", "x-api-key header is required");
    if (allowedKeys !== undefined && !allowedKeys.has(key))
      throw new SimApiError("authentication_error", "invalid x-api-key");
    ex.entry.keyId = keyIdOf(key);
    return key;
  };

  const routeContext: MessagesRouteContext = {
    maxBody,
    authenticate,
    cache,
    faults,
    cacheScope: options.cacheScope,
    ttftMs: ttftDefault,
    tokensPerSecond: tpsDefault,
    firstByte,
    accepted: (build) => {
      if (events.listenerCount("accepted") > 0) emit("accepted", build());
    },
  };

  const statsOf = (): SimStats => ({ ...log.stats(), cache: cache.stats() });

  const simRoute = (ex: Exchange, path: string, url: URL): void => {
    const method = ex.req.method ?? "GET";
    if (path === "/v1/sim/stats" && method === "GET") sendJson(ex, 200, statsOf());
    else if (path === "/v1/sim/health" && method === "GET") sendJson(ex, 200, { ok: true });
    else if (path === "/v1/sim/requests" && method === "GET") {
      const limit = Number(url.searchParams.get("limit") ?? "0");
      const bodies = url.searchParams.get("bodies") !== "0" && url.searchParams.get("bodies") !== "false";
      let data = log.entries();
      if (limit > 0) data = data.slice(-limit);
      if (!bodies) data = data.map(withoutBody);
      sendJson(ex, 200, { data });
    } else if (path === "/v1/sim/reset" && method === "POST") {
      reset();
      sendJson(ex, 200, { ok: true });
    } else sendError(ex, new SimApiError("not_found_error", `Not found: ${method} ${path}`));
  };

  const reset = (): void => {
    cache.clear();
    log.clear();
    faults.clear();
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const n = ++seq;
    const id = `req_sim${instance}${n.toString(36).padStart(8, "0")}`;
    const receivedAt = hiResNow();
    const url = new URL(req.url ?? "/", "http://sim");
    const path = url.pathname.replace(/\/+$/, "") || "/";
    res.setHeader("request-id", id);
    const ex: Exchange = {
      seq: n,
      id,
      req,
      res,
      abort: new AbortController(),
      plan: undefined,
      inputUsage: undefined,
      outputTokens: 0,
      logged: false,
      entry: {
        seq: n,
        id,
        time: new Date(receivedAt).toISOString(),
        receivedAt,
        acceptedAt: null,
        firstByteAt: null,
        endedAt: receivedAt,
        method: req.method ?? "GET",
        path,
        keyId: null,
        model: null,
        stream: false,
        status: null,
        errorType: null,
        errorMessage: null,
        fault: null,
        turn: null,
        stopReason: null,
        usage: null,
        outputTokensSent: 0,
        disconnected: false,
        disconnectedAt: null,
        cut: false,
        betas: [],
        body: "",
      },
    };
    if (path.startsWith("/v1/sim/")) {
      simRoute(ex, path, url);
      return;
    }
    inFlight.add(ex);
    res.on("close", () => {
      ex.abort.abort(GONE);
      if (!res.writableFinished && !ex.entry.cut && !closing) {
        const at = hiResNow();
        ex.entry.disconnected = true;
        ex.entry.disconnectedAt = at;
        emit("disconnect", {
          seq: n,
          id,
          at,
          afterFirstByte: ex.entry.firstByteAt !== null,
          outputTokensSent: ex.entry.outputTokensSent,
        } satisfies DisconnectEvent);
      }
      finish(ex);
    });
    let route: ((ex: Exchange) => Promise<void>) | undefined;
    if (path === "/v1/messages") route = (exchange) => messagesRoute(routeContext, exchange);
    else if (path === "/v1/messages/count_tokens")
      route = (exchange) => countTokensRoute(routeContext, exchange);
    if (route === undefined) {
      sendError(ex, new SimApiError("not_found_error", `Not found: ${req.method} ${path}`));
      return;
    }
    if (req.method !== "POST") {
      sendError(
        ex,
        new SimApiError("invalid_request_error", `Method ${req.method} not allowed on ${path}`, {
          status: 405,
        }),
      );
      return;
    }
    route(ex).catch((err: unknown) => {
      if (err instanceof SimApiError) sendError(ex, err);
      else {
        sendError(
          ex,
          new SimApiError(
            "api_error",
            `Internal simulator error: ${(err as Error)?.message ?? String(err)}`,
            { cause: err },
          ),
        );
      }
    });
  };

  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, handle);
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      closing = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const ex of inFlight) ex.abort.abort(GONE);
      server.closeAllConnections();
      await stopped;
      for (const ex of [...inFlight]) finish(ex);
      await log.close();
    })();
    return closed;
  };

  const sim: Sim = {
    url,
    port,
    host,
    requests: () => log.entries(),
    stats: statsOf,
    on(event, listener) {
      events.on(event, listener as (e: unknown) => void);
      return sim;
    },
    off(event, listener) {
      events.off(event, listener as (e: unknown) => void);
      return sim;
    },
    next(event, opts) {
      return new Promise((resolve, reject) => {
        const signal = opts?.signal;
        if (signal?.aborted) {
          reject(signal.reason);
          return;
        }
        const listener = (e: SimEvents[typeof event]): void => {
          if (opts?.filter !== undefined && !opts.filter(e)) return;
          cleanup();
          resolve(e);
        };
        const onAbort = (): void => {
          cleanup();
          reject(signal?.reason);
        };
        const cleanup = (): void => {
          events.off(event, listener as (e: unknown) => void);
          signal?.removeEventListener("abort", onAbort);
        };
        events.on(event, listener as (e: unknown) => void);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    },
    reset,
    close,
    [Symbol.asyncDispose]: close,
  };
  return sim;
}
