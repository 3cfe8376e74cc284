// `forkd proxy`: an HTTP server an agent uses as its Anthropic base URL (the root) or its OpenAI base
// URL (`/openai`) or its Gemini base URL (`/gemini`). Every request goes to that route's upstream unchanged and every response comes
// back unchanged, streamed chunk by chunk as it arrives; on the side, each finished model call
// (Messages, Chat Completions, Responses, Gemini: see turn-apis.ts) is recorded in a TurnStore (the request
// as sent, its betas, the reply reassembled) for `forkd mcp` to fork from. A small control API under
// /_forkd/ (bearer token) answers `forkd mcp`'s lookups. Credentials are forwarded, never stored or
// logged.

import { randomBytes, timingSafeEqual } from "node:crypto";
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { type Logger, silentLogger } from "@forkd/core";
import { verbatimValuesOf } from "@forkd/core/internal";
import type { VerbatimValue } from "@forkd/protocol";
import { parseJsonText } from "@forkd/protocol/internal";
import { mcpInstancesOf } from "./session-key.js";
import { type ToolCall, type TurnApi, type TurnApiModule, type TurnReply, turnApiOf } from "./turn-apis.js";
import { type ProxyTurn, type ToolCallQuery, TurnStore, type TurnStoreLimits } from "./turn-store.js";

/** Where the real Anthropic API is. */
export const DEFAULT_UPSTREAM = "https://api.anthropic.com";
/** Where the real OpenAI API is: a base URL as OpenAI clients take it, `/v1` included. */
export const DEFAULT_OPENAI_UPSTREAM = "https://api.openai.com/v1";
/**
 * The path under which the proxy serves the OpenAI API: an agent's OpenAI base URL is
 * `<proxy>/openai`, and `<proxy>/openai/<rest>` goes to `<openai upstream>/<rest>`.
 */
export const OPENAI_ROUTE = "/openai";
/** Where the real Gemini API is: a base URL as the Gemini CLI takes it (`GOOGLE_GEMINI_BASE_URL`). */
export const DEFAULT_GEMINI_UPSTREAM = "https://generativelanguage.googleapis.com";
/**
 * The path under which the proxy serves the Gemini API: an agent's Gemini base URL is
 * `<proxy>/gemini`, and `<proxy>/gemini/<rest>` goes to `<gemini upstream>/<rest>`.
 */
export const GEMINI_ROUTE = "/gemini";
/** The path prefix of the proxy's own API; never forwarded. */
export const CONTROL_PREFIX = "/_forkd/v1/";
/** Longest a control lookup may wait for a turn to be recorded. @unit ms */
const MAX_LOOKUP_WAIT_MS = 30_000;
/** Largest control request body. @unit bytes */
const MAX_CONTROL_BODY_BYTES = 1024 * 1024;
/**
 * Largest Messages request body the proxy keeps a copy of to record its turn (the API's own limit
 * is 32 MB); a larger one is forwarded and not recorded. Without a bound, one POST — which any web
 * page can send to the proxy's port without a preflight — held its whole body, several times over,
 * in the proxy's memory. @unit bytes
 */
export const MAX_RECORDED_REQUEST_BYTES = 64 * 1024 * 1024;

// Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection, not to the exchange.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);
// What the proxy can decode to read a reply; the client's other encodings are not offered upstream.
const DECODABLE = new Set(["gzip", "x-gzip", "deflate", "br", "identity"]);

/** Options of {@link startProxy}. */
export interface ProxyOptions {
  /** The Anthropic API: where requests outside {@link OPENAI_ROUTE} go. @default DEFAULT_UPSTREAM */
  upstream?: string;
  /**
   * The OpenAI(-compatible) API's base URL, `/v1` (or the provider's own path) included: where
   * requests under {@link OPENAI_ROUTE} go, that prefix replaced by it. @default DEFAULT_OPENAI_UPSTREAM
   */
  openaiUpstream?: string;
  /**
   * The Gemini API's base URL: where requests under {@link GEMINI_ROUTE} go, that prefix replaced by
   * it. @default DEFAULT_GEMINI_UPSTREAM
   */
  geminiUpstream?: string;
  /** @default "127.0.0.1" */
  host?: string;
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** Bearer token of the control API; generated when absent. */
  controlToken?: string;
  /** Limits of what the proxy remembers. */
  limits?: TurnStoreLimits;
  /**
   * Called after each recorded turn (e.g. to write it to disk), with the request's text as the agent
   * sent it; errors are logged, never thrown.
   */
  onTurn?: (turn: ProxyTurn, requestText: string) => void | Promise<void>;
  logger?: Logger;
}

/** A running proxy. */
export interface RunningProxy extends AsyncDisposable {
  /** Base URL agents use, e.g. `http://127.0.0.1:8787`. */
  readonly url: string;
  /** Bearer token of the control API. */
  readonly controlToken: string;
  readonly turns: TurnStore;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

/** Starts a proxy. Resolves once it listens. */
export async function startProxy(options: ProxyOptions = {}): Promise<RunningProxy> {
  const upstreams = {
    anthropic: httpUrl("upstream", options.upstream ?? DEFAULT_UPSTREAM),
    openai: httpUrl("openaiUpstream", options.openaiUpstream ?? DEFAULT_OPENAI_UPSTREAM),
    gemini: httpUrl("geminiUpstream", options.geminiUpstream ?? DEFAULT_GEMINI_UPSTREAM),
  };
  const controlToken = options.controlToken ?? randomBytes(24).toString("hex");
  const turns = new TurnStore(options.limits);
  const logger = options.logger ?? silentLogger;
  const context: ExchangeContext = {
    upstreams,
    turns,
    logger,
    onTurn: options.onTurn,
  };

  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith(CONTROL_PREFIX)) {
      void serveControl(req, res, controlToken, turns).catch((error: unknown) => {
        logger.error({ err: error }, "proxy control request failed");
        if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
        else res.destroy();
      });
      return;
    }
    forward(req, res, context);
  });
  server.on("upgrade", refuseUpgrade);
  // Streams of a long turn can be silent for minutes; the upstream decides when it is too long.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    url: `http://${host}:${address.port}`,
    controlToken,
    turns,
    close,
    [Symbol.asyncDispose]: close,
  };
}

function httpUrl(option: string, text: string): URL {
  const url = new URL(text);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`${option} must be an http(s) URL, got ${url.href}`);
  }
  return url;
}

/** A proxy route: where its requests go, and the request target relative to it. */
type Route = TurnApiModule["route"];

interface ExchangeContext {
  upstreams: Record<Route, URL>;
  turns: TurnStore;
  logger: Logger;
  onTurn: ProxyOptions["onTurn"];
}

/** The route of a request target, and the target relative to it. */
function routeOf(target: string): { route: Route; target: string } {
  if (target.startsWith(`${OPENAI_ROUTE}/`))
    return { route: "openai", target: target.slice(OPENAI_ROUTE.length) };
  if (target.startsWith(`${GEMINI_ROUTE}/`))
    return { route: "gemini", target: target.slice(GEMINI_ROUTE.length) };
  return { route: "anthropic", target };
}

/** An error body in the shape the route's API gives its errors, so the agent shows the message. */
function errorBody(route: Route, type: string, message: string): unknown {
  if (route === "gemini")
    return {
      error: {
        code: type === "api_error" ? 502 : 400,
        message,
        status: type === "api_error" ? "UNAVAILABLE" : "INVALID_ARGUMENT",
      },
    };
  return route === "openai"
    ? { error: { message, type, param: null, code: null } }
    : { type: "error", error: { type, message } };
}

/**
 * The upstream URL of a request: the upstream's own path, then the request's path and query; or
 * `undefined` for a request target that is not a path (`http://host/…`, `*`).
 *
 * The target is copied into the upstream's URL, never resolved against it: resolved as a reference,
 * `//host/…` or `http://host/…` names another host, and the proxy would relay anything, credentials
 * included, anywhere it can reach.
 */
function upstreamUrlOf(upstream: URL, target: string): URL | undefined {
  if (!target.startsWith("/")) return undefined;
  const base = upstream.pathname.endsWith("/") ? upstream.pathname.slice(0, -1) : upstream.pathname;
  const query = target.indexOf("?");
  const url = new URL(upstream.href);
  url.pathname = `${base}${query === -1 ? target : target.slice(0, query)}`;
  url.search = query === -1 ? "" : target.slice(query);
  url.hash = "";
  return url.origin === upstream.origin ? url : undefined;
}

function forwardedHeaders(
  headers: IncomingHttpHeaders,
  upstream: URL,
  recording: boolean,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
  out.host = upstream.host;
  if (recording && typeof headers["accept-encoding"] === "string") {
    const offered = headers["accept-encoding"]
      .split(",")
      .map((part) => part.trim())
      .filter((part) => DECODABLE.has(part.split(";")[0]!.trim().toLowerCase()));
    if (offered.length === 0) delete out["accept-encoding"];
    else out["accept-encoding"] = offered.join(", ");
  }
  return out;
}

function forward(req: IncomingMessage, res: ServerResponse, context: ExchangeContext): void {
  const started = Date.now();
  const routed = routeOf(req.url ?? "/");
  const upstream = context.upstreams[routed.route];
  const api = turnApiOf(req.method, routed.route, routed.target.split("?")[0]!);
  const recording = api !== undefined;
  const body: Buffer[] = [];
  let bodyBytes = 0;
  let keepBody = recording;
  const exchange: ExchangeRecord = { request: undefined };
  const target = upstreamUrlOf(upstream, routed.target);
  if (target === undefined) {
    req.resume();
    sendJson(
      res,
      400,
      errorBody(routed.route, "invalid_request_error", "forkd proxy: the request target must be a path"),
    );
    return;
  }
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  const upstreamRequest = send(target, {
    method: req.method,
    headers: forwardedHeaders(req.headers, target, recording),
  });
  let finished = false;
  let agentHungUp = false;
  // The agent hung up (Esc in Claude Code, a client timeout): the upstream call is abandoned too.
  res.on("close", () => {
    if (finished) return;
    agentHungUp = true;
    upstreamRequest.destroy();
  });
  upstreamRequest.on("error", (error) => {
    // Abandoning the call fails it ("socket hang up"): the agent's doing, nothing went wrong.
    if (agentHungUp) {
      context.logger.debug({ path: target.pathname }, "the agent hung up; upstream call abandoned");
      return;
    }
    context.logger.warn({ path: target.pathname, err: error.message }, "upstream request failed");
    if (!res.headersSent) {
      sendJson(
        res,
        502,
        errorBody(
          routed.route,
          "api_error",
          `forkd proxy: upstream ${upstream.host} unreachable: ${error.message}`,
        ),
      );
    } else {
      res.destroy(error);
    }
  });
  upstreamRequest.on("response", (upstreamResponse) => {
    const status = upstreamResponse.statusCode ?? 502;
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(upstreamResponse.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    res.writeHead(status, upstreamResponse.statusMessage, headers);
    res.flushHeaders();
    const reader =
      api !== undefined && status === 200
        ? replyReader(upstreamResponse.headers, req, api, exchange, context)
        : undefined;
    upstreamResponse.on("data", (chunk: Buffer) => {
      // Read before forwarding: the turn is on record before the agent can act on the reply's end.
      reader?.push(chunk);
      if (!res.write(chunk)) {
        upstreamResponse.pause();
        res.once("drain", () => upstreamResponse.resume());
      }
    });
    upstreamResponse.on("end", () => {
      finished = true;
      reader?.end();
      res.end();
      context.logger.info(
        { method: req.method, path: target.pathname, status, ms: Date.now() - started },
        "proxied",
      );
    });
    upstreamResponse.on("error", (error) => res.destroy(error));
  });
  req.on("data", (chunk: Buffer) => {
    if (keepBody) {
      bodyBytes += chunk.length;
      if (bodyBytes > MAX_RECORDED_REQUEST_BYTES) {
        keepBody = false;
        body.length = 0;
      } else {
        body.push(chunk);
      }
    }
    if (!upstreamRequest.write(chunk)) {
      req.pause();
      upstreamRequest.once("drain", () => req.resume());
    }
  });
  req.on("end", () => {
    upstreamRequest.end();
    // Parsed while the upstream thinks, not when the reply ends: recording the turn then costs nothing.
    if (keepBody) exchange.request = parseRequest(body.splice(0));
  });
  req.on("error", () => upstreamRequest.destroy());
}

/** What the proxy keeps of one exchange's request while the reply streams. */
interface ExchangeRecord {
  request:
    | {
        parsed: Record<string, unknown>;
        bytes: number;
        /** The body as the client wrote it, kept until the turn is recorded and checked. */
        text: string;
      }
    | undefined;
}

function parseRequest(chunks: readonly Buffer[]): ExchangeRecord["request"] {
  const raw = Buffer.concat(chunks);
  try {
    const text = raw.toString("utf8");
    const parsed = parseJsonText(text);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
    return { parsed: parsed as Record<string, unknown>, bytes: raw.length, text };
  } catch {
    return undefined;
  }
}

/**
 * An Anthropic or OpenAI request's values that a JavaScript reading would write differently, in the
 * agent's text, for its forks (`verbatim` of the prefix, or of the native prefix): none from an agent
 * in JavaScript, whose body is what JSON.stringify writes (checked first: the walk is for the others).
 * None of a Gemini request: the Gemini API parses the body into its protocol buffers, so it reads
 * `1.0` and `1` as one value, and a fork that writes the value as JavaScript does sends the same
 * prompt (docs/fork-semantics.md). Run once the reply has been read.
 */
function verbatimOf(
  api: TurnApi,
  request: Record<string, unknown>,
  text: string,
): { verbatim?: VerbatimValue[] } {
  if (api === "gemini") return {};
  const verbatim = verbatimValuesOf(request, text, api);
  return verbatim.length > 0 ? { verbatim } : {};
}

interface ReplyReader {
  push(chunk: Buffer): void;
  end(): void;
}

/** Reads a copy of a model call's reply, decoding it if compressed, and records the turn when complete. */
function replyReader(
  responseHeaders: IncomingHttpHeaders,
  req: IncomingMessage,
  api: TurnApiModule,
  exchange: ExchangeRecord,
  context: ExchangeContext,
): ReplyReader {
  const streamed = String(responseHeaders["content-type"] ?? "").includes("text/event-stream");
  const assembler = api.assembler();
  const decoder = new StringDecoder("utf8");
  const json: string[] = [];
  let recorded = false;
  const onText = (text: string) => {
    if (recorded) return;
    if (streamed) {
      if (assembler.push(text) && assembler.reply !== undefined) {
        recorded = true;
        record(assembler.reply);
      }
    } else {
      json.push(text);
    }
  };
  const onEnd = () => {
    onText(decoder.end());
    if (recorded) return;
    if (!streamed) {
      let reply: TurnReply | undefined;
      try {
        reply = api.replyOfJson(parseJsonText(json.join("")));
      } catch (error) {
        context.logger.warn({ err: (error as Error).message }, "reply is not JSON; turn not recorded");
        return;
      }
      if (reply === undefined)
        context.logger.warn({ api: api.api }, "reply holds no message; turn not recorded");
      else record(reply);
    } else if (assembler.end() && assembler.reply !== undefined) {
      recorded = true;
      record(assembler.reply);
    } else if (assembler.error !== undefined) {
      context.logger.warn(
        { err: assembler.error.message },
        "stream could not be reassembled; turn not recorded",
      );
    }
  };
  const record = (response: TurnReply) => {
    // Unparsed only if the upstream accepted a body that is not JSON: nothing to fork from then.
    if (exchange.request === undefined) return;
    const { parsed: request, bytes, text } = exchange.request;
    const betaHeader = req.headers["anthropic-beta"];
    const betas = (Array.isArray(betaHeader) ? betaHeader.join(",") : (betaHeader ?? ""))
      .split(",")
      .map((name) => name.trim())
      .filter((name) => name !== "");
    const session = api.sessionKey(req.headers, request, req.url ?? "/");
    const turn = context.turns.record({
      session,
      api: api.api,
      path: withoutCredential(req.url ?? "/"),
      request,
      betas,
      response,
      toolCalls: api.toolCalls(response, request),
      mcpInstances: mcpInstancesOf(request),
      requestBytes: bytes,
      ...verbatimOf(api.api, request, text),
    });
    if (context.onTurn !== undefined) {
      void Promise.resolve()
        .then(() => context.onTurn?.(turn, text))
        .catch((error: unknown) =>
          context.logger.error({ err: error, session: turn.session, seq: turn.seq }, "onTurn failed"),
        );
    }
  };

  const encoding = String(responseHeaders["content-encoding"] ?? "identity").toLowerCase();
  const inflate =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : undefined;
  if (inflate === undefined) {
    return { push: (chunk) => onText(decoder.write(chunk)), end: onEnd };
  }
  inflate.on("data", (chunk: Buffer) => onText(decoder.write(chunk)));
  inflate.on("end", onEnd);
  inflate.on("error", (error) => context.logger.warn({ err: error.message }, "reply could not be decoded"));
  return { push: (chunk) => inflate.write(chunk), end: () => inflate.end() };
}

/**
 * A request target without its `key` query parameters: Gemini clients may send their API key there,
 * and the proxy keeps no credential.
 */
function withoutCredential(target: string): string {
  const query = target.indexOf("?");
  if (query === -1) return target;
  const params = new URLSearchParams(target.slice(query + 1));
  if (!params.has("key")) return target;
  params.delete("key");
  const rest = params.toString();
  return rest === "" ? target.slice(0, query) : `${target.slice(0, query)}?${rest}`;
}

/**
 * Answers a protocol upgrade (a WebSocket) with 426 and closes the connection. The proxy relays and
 * records HTTP exchanges only; a client that prefers WebSockets where it may fall back (the Codex
 * CLI's Responses transport) takes 426 as "use HTTP" and falls back at once. Forwarded as a plain
 * request, the upgrade got the upstream's 404 or 405, and Codex retried it six times (6 s) before
 * falling back.
 */
function refuseUpgrade(req: IncomingMessage, socket: Duplex): void {
  const text = JSON.stringify({
    type: "error",
    error: {
      type: "invalid_request_error",
      message: "forkd proxy: WebSocket is not supported here; use HTTP",
    },
  });
  socket.on("error", () => socket.destroy());
  socket.end(
    "HTTP/1.1 426 Upgrade Required\r\n" +
      "Connection: close\r\n" +
      "Content-Type: application/json\r\n" +
      `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
  req.resume();
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const expected = Buffer.from(`Bearer ${token}`);
  const given = Buffer.from(header ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_CONTROL_BODY_BYTES) throw new RangeError("control request too large");
    chunks.push(chunk);
  }
  return parseJsonText(Buffer.concat(chunks).toString("utf8"));
}

/** A recorded turn as the control API returns it. */
export interface TurnJson {
  session: string;
  seq: number;
  at: number;
  /** The API the turn spoke. */
  api: TurnApi;
  /** The request's path and query, its `key` parameter left out (a Gemini call's names its model). */
  path: string;
  request: Record<string, unknown>;
  /** The reply as the API takes it back (see `TurnReply`). */
  response: TurnReply;
  /** The reply's tool calls, in order. */
  toolCalls: ToolCall[];
  betas: string[];
}

function turnJson(turn: ProxyTurn): TurnJson {
  const { session, seq, at, api, path, request, response, toolCalls, betas } = turn;
  return { session, seq, at, api, path, request, response, toolCalls, betas };
}

async function serveControl(
  req: IncomingMessage,
  res: ServerResponse,
  controlToken: string,
  turns: TurnStore,
): Promise<void> {
  if (!tokenMatches(req.headers.authorization, controlToken)) {
    sendJson(res, 401, { error: "missing or wrong bearer token" });
    return;
  }
  const path = (req.url ?? "").slice(CONTROL_PREFIX.length).split("?")[0];
  if (req.method === "GET" && path === "health") {
    sendJson(res, 200, { ok: true, sessions: turns.sessions().length, bytes: turns.bytes });
    return;
  }
  if (req.method === "GET" && path === "sessions") {
    sendJson(res, 200, { sessions: turns.sessions() });
    return;
  }
  if (req.method === "POST" && path === "find-tool-call") {
    let query: ToolCallQuery & { waitMs?: number };
    try {
      query = parseLookup(await readJson(req));
    } catch (error) {
      sendJson(res, 400, { error: (error as Error).message });
      return;
    }
    const wait = Math.min(query.waitMs ?? 0, MAX_LOOKUP_WAIT_MS);
    const match = await turns.waitForToolCall(query, wait);
    if (match === undefined) sendJson(res, 404, { error: "no recorded turn holds that call" });
    else sendJson(res, 200, { turn: turnJson(match.turn), tool_use: match.toolUse });
    return;
  }
  sendJson(res, 404, { error: `no such control route: ${req.method} ${path}` });
}

function parseLookup(body: unknown): ToolCallQuery & { waitMs?: number } {
  const value = body as Record<string, unknown> | null;
  if (value === null || typeof value !== "object") throw new TypeError("expected a JSON object");
  if (typeof value.toolName !== "string" || value.toolName === "")
    throw new TypeError("toolName: expected a name");
  if (!("input" in value)) throw new TypeError("input: required");
  const query: ToolCallQuery & { waitMs?: number } = { toolName: value.toolName, input: value.input };
  if (typeof value.mcpInstance === "string") query.mcpInstance = value.mcpInstance;
  if (typeof value.session === "string") query.session = value.session;
  if (typeof value.toolUseId === "string") query.toolUseId = value.toolUseId;
  if (Array.isArray(value.exclude))
    query.exclude = value.exclude.filter((id): id is string => typeof id === "string");
  if (typeof value.waitMs === "number" && Number.isFinite(value.waitMs)) query.waitMs = value.waitMs;
  return query;
}
