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
import { contextWindowTokens, minCacheableTokens } from "@forkd/protocol";
import { type Breakpoint, LOOKBACK_BLOCKS, PromptCache, resolveBreakpoints } from "./cache.js";
import { hiResNow, systemClock } from "./clock.js";
import { apiErrorBody, invalidRequest, SimApiError, SimOptionsError, statusOfErrorType } from "./errors.js";
import { apiKeyOf, betasOf, type Exchange, GONE, parseJson, readBody, sendJson, sleep } from "./exchange.js";
import { describeFault, FAULT_MESSAGES, FaultInjector, type FaultSpec, parseFault } from "./faults.js";
import { RequestLog, type RequestLogEntry, withoutBody } from "./log.js";
import { runScriptedModel } from "./model.js";
import { optionsSchema, type SimOptions } from "./options.js";
import { layoutPrompt } from "./prompt.js";
import type { AcceptedEvent, DisconnectEvent, FirstByteEvent, SimEvents, SimStats } from "./sim-events.js";
import { messageFrames } from "./sse.js";
import { streamFrames } from "./stream-response.js";
import type { MessageResponse, Usage } from "./types.js";
import { validateRequest } from "./validate.js";

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
      : {
          rate: options.faults.rate,
          ...(options.faults.seed === undefined ? {} : { seed: options.faults.seed }),
          ...(kinds === undefined ? {} : { kinds }),
        },
  );
  const log = new RequestLog({
    ...(options.logFile === undefined ? {} : { file: options.logFile }),
    ...(options.logLimit === undefined ? {} : { limit: options.logLimit }),
  });
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

  const countTokensRoute = async (ex: Exchange): Promise<void> => {
    const body = await readBody(ex, maxBody);
    if (body === undefined) return;
    authenticate(ex);
    const request = validateRequest(parseJson(body.text), "count_tokens", betasOf(ex));
    ex.entry.model = request.model;
    const layout = layoutPrompt(request);
    resolveBreakpoints(layout, request.cache_control);
    ex.entry.acceptedAt = hiResNow();
    sendJson(ex, 200, { input_tokens: layout.totalTokens });
  };

  const messagesRoute = async (ex: Exchange): Promise<void> => {
    const body = await readBody(ex, maxBody);
    if (body === undefined) return;
    const entry = ex.entry;
    const apiKey = authenticate(ex);
    const betas = betasOf(ex);
    const request = validateRequest(parseJson(body.text), "messages", betas);
    entry.model = request.model;
    const stream = request.stream === true;
    entry.stream = stream;
    const layout = layoutPrompt(request);
    // The API refuses a prompt longer than the model's window (the 1M window only with its beta).
    const window = contextWindowTokens(request.model, betas);
    if (layout.totalTokens > window) {
      throw invalidRequest(`prompt is too long: ${layout.totalTokens} tokens > ${window} maximum`);
    }
    const breakpoints: Breakpoint[] = resolveBreakpoints(layout, request.cache_control);
    const reply = runScriptedModel(request);
    entry.turn = reply.turn;

    let fault: FaultSpec | null = null;
    if (reply.fault !== undefined) {
      if (
        !reply.fault.once ||
        faults.firstTime(`${entry.keyId}\u0000${createHash("sha256").update(body.bytes).digest("base64url")}`)
      ) {
        fault = reply.fault.spec;
      }
    } else {
      fault = faults.draw();
    }
    if (fault !== null && !stream && fault.kind === "stream-error") {
      fault = { kind: "status", status: statusOfErrorType(fault.errorType), errorType: fault.errorType };
    }
    if (fault !== null) entry.fault = describeFault(fault);
    if (fault?.kind === "status") {
      const headers: Record<string, string> = {};
      if (fault.retryAfterSeconds !== undefined) headers["retry-after"] = String(fault.retryAfterSeconds);
      throw new SimApiError(
        fault.errorType,
        FAULT_MESSAGES[fault.errorType] ?? `Simulated fault (HTTP ${fault.status})`,
        {
          status: fault.status,
          headers,
        },
      );
    }

    const scope =
      options.cacheScope === undefined ? (entry.keyId as string) : `scope:${options.cacheScope(apiKey)}`;
    const plan = cache.plan(layout, breakpoints, scope);
    ex.plan = plan;
    entry.acceptedAt = hiResNow();
    ex.inputUsage = { ...plan.usage, service_tier: "standard" };
    if (events.listenerCount("accepted") > 0) {
      emit("accepted", {
        seq: ex.seq,
        id: ex.id,
        at: entry.acceptedAt,
        stream,
        usage: plan.usage,
      } satisfies AcceptedEvent);
    }
    ex.outputTokens = reply.outputTokens;
    entry.stopReason = reply.stopReason;
    const message: MessageResponse = {
      id: `msg_sim${ex.id.slice(7)}`,
      type: "message",
      role: "assistant",
      model: request.model,
      content: reply.content,
      stop_reason: reply.stopReason,
      stop_sequence: reply.stopSequence,
      usage: { ...plan.usage, output_tokens: reply.outputTokens, service_tier: "standard" },
    };
    const ttft = reply.ttftMs ?? ttftDefault;
    const tps = reply.tokensPerSecond ?? tpsDefault;
    const signal = ex.abort.signal;

    if (stream) {
      if (!(await sleep(ttft, signal))) return;
      const boundaries = fault !== null ? [fault.afterTokens] : [];
      const chunkTokens = tps > 0 ? Math.max(1, Math.ceil(tps / 50)) : 16;
      await streamFrames(ex, messageFrames(message, { chunkTokens, boundaries }), tps, fault, firstByte);
      return;
    }
    const generation = tps > 0 ? (reply.outputTokens / tps) * 1000 : 0;
    if (!(await sleep(ttft + generation, signal))) return;
    const text = JSON.stringify(message);
    const { res } = ex;
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    entry.status = 200;
    firstByte(ex, false);
    if (fault?.kind === "cut") {
      res.write(text.slice(0, Math.floor(text.length / 2)));
      entry.outputTokensSent = Math.min(fault.afterTokens, reply.outputTokens);
      entry.cut = true;
      res.destroy();
      return;
    }
    entry.outputTokensSent = reply.outputTokens;
    res.end(text);
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
    if (path === "/v1/messages") route = messagesRoute;
    else if (path === "/v1/messages/count_tokens") route = countTokensRoute;
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
