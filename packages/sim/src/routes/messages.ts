// The simulator's Anthropic routes: `POST /v1/messages` and `POST /v1/messages/count_tokens`. What
// they need of the server (its cache, faults, keys and events) comes in a context, so each route is
// a function of its request.
import { createHash } from "node:crypto";
import { contextWindowTokens } from "@forkd/protocol";
import { type Breakpoint, type PromptCache, resolveBreakpoints } from "../cache.js";
import { type CacheDiagnostics, diagnosticsParamOf } from "../cache-diagnostics.js";
import { hiResNow } from "../clock.js";
import { invalidRequest, SimApiError, statusOfErrorType } from "../errors.js";
import {
  betasOf,
  type Exchange,
  parseJson,
  parseJsonWithUnkept,
  type RequestBody,
  readBody,
  sendError,
  sendJson,
  sleep,
} from "../exchange.js";
import { describeFault, FAULT_MESSAGES, type FaultInjector, type FaultSpec } from "../faults.js";
import { runScriptedModel } from "../model.js";
import { layoutPrompt } from "../prompt.js";
import type { AcceptedEvent } from "../sim-events.js";
import { messageFrames } from "../sse.js";
import { streamFrames } from "../stream-response.js";
import type { MessageResponse } from "../types.js";
import { validateRequest } from "../validate.js";
import { inMessagesPrompt } from "../verbatim.js";

/** What every route needs of the server. */
export interface RouteContext {
  /** Largest request body. @unit bytes */
  maxBody: number;
  /**
   * Checks the request's API key (`key` when the route read it from its own header, else Anthropic's
   * and OpenAI's headers) and records its id on the log entry; returns the key.
   */
  authenticate(ex: Exchange, key?: string): string;
}

/** What `POST /v1/messages` needs of the server besides {@link RouteContext}. */
export interface MessagesRouteContext extends RouteContext {
  cache: PromptCache;
  /** Fingerprints of the requests that opted in to cache diagnostics. */
  diagnostics: CacheDiagnostics;
  faults: FaultInjector;
  /** Maps an API key to its cache scope; absent: every key its own. */
  cacheScope: ((apiKey: string) => string) | undefined;
  /** Time to first token unless the script says otherwise. @unit ms */
  ttftMs: number;
  /** Output speed unless the script says otherwise; 0: at once. @unit tokens per second */
  tokensPerSecond: number;
  /** The response starts: cache writes become readable, input is charged. */
  firstByte(ex: Exchange, stream: boolean): void;
  /** Reports an accepted request; `build` runs only when someone listens. */
  accepted(build: () => AcceptedEvent): void;
}

/**
 * Answers an Anthropic API request: `POST /v1/messages` and `POST /v1/messages/count_tokens`, a 404
 * for another path and a 405 for another method. Whatever a route throws becomes its error response:
 * a {@link SimApiError} as itself, anything else as a 500 `api_error`.
 */
export function anthropicRoute(context: MessagesRouteContext, ex: Exchange, path: string): void {
  const method = ex.req.method;
  let route: ((context: MessagesRouteContext, ex: Exchange) => Promise<void>) | undefined;
  if (path === "/v1/messages") route = messagesRoute;
  else if (path === "/v1/messages/count_tokens") route = countTokensRoute;
  if (route === undefined) {
    sendError(ex, new SimApiError("not_found_error", `Not found: ${method} ${path}`));
    return;
  }
  if (method !== "POST") {
    sendError(
      ex,
      new SimApiError("invalid_request_error", `Method ${method} not allowed on ${path}`, { status: 405 }),
    );
    return;
  }
  route(context, ex).catch((err: unknown) => {
    sendError(
      ex,
      err instanceof SimApiError
        ? err
        : new SimApiError(
            "api_error",
            `Internal simulator error: ${(err as Error)?.message ?? String(err)}`,
            {
              cause: err,
            },
          ),
    );
  });
}

/** The SHA-256 of a body's bytes (a `once` fault fires for the first request with these bytes). */
function bodyDigest(body: RequestBody): string {
  const hash = createHash("sha256");
  for (const chunk of body.chunks) hash.update(chunk);
  return hash.digest("base64url");
}

/** `POST /v1/messages/count_tokens`: the prompt's size, checked like a message request. */
export async function countTokensRoute(context: RouteContext, ex: Exchange): Promise<void> {
  const body = await readBody(ex, context.maxBody);
  if (body === undefined) return;
  context.authenticate(ex);
  const request = validateRequest(parseJson(body), "count_tokens", betasOf(ex));
  ex.entry.model = request.model;
  const layout = layoutPrompt(request);
  resolveBreakpoints(layout, request.cache_control);
  ex.entry.acceptedAt = hiResNow();
  sendJson(ex, 200, { input_tokens: layout.totalTokens });
}

/**
 * `POST /v1/messages`: validates the request, refuses a prompt past the model's window, runs the
 * scripted model, applies a fault if one is due, plans the cache read and writes, and answers
 * (streamed or whole) after the time to first token.
 */
export async function messagesRoute(context: MessagesRouteContext, ex: Exchange): Promise<void> {
  const body = await readBody(ex, context.maxBody);
  if (body === undefined) return;
  const entry = ex.entry;
  const apiKey = context.authenticate(ex);
  const betas = betasOf(ex);
  const { value: raw, unkept } = parseJsonWithUnkept(body, inMessagesPrompt);
  const request = validateRequest(raw, "messages", betas);
  const diagnosticsParam = diagnosticsParamOf(raw);
  entry.model = request.model;
  const stream = request.stream === true;
  entry.stream = stream;
  const layout = layoutPrompt(request, unkept);
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
    if (!reply.fault.once || context.faults.firstTime(`${entry.keyId}\u0000${bodyDigest(body)}`)) {
      fault = reply.fault.spec;
    }
  } else {
    fault = context.faults.draw();
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
    context.cacheScope === undefined ? (entry.keyId as string) : `scope:${context.cacheScope(apiKey)}`;
  const plan = context.cache.plan(layout, breakpoints, scope);
  ex.plan = plan;
  entry.acceptedAt = hiResNow();
  ex.inputUsage = { ...plan.usage, service_tier: "standard" };
  const acceptedAt = entry.acceptedAt;
  context.accepted(() => ({ seq: ex.seq, id: ex.id, at: acceptedAt, stream, usage: plan.usage }));
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
  if (diagnosticsParam !== undefined) {
    // The API answers `diagnostics` only to a request that asked (and `null` when nothing diverged).
    message.diagnostics = context.diagnostics.diagnose(
      scope,
      message.id,
      diagnosticsParam.previousMessageId,
      layout,
      (raw as { speed?: unknown }).speed,
      request.messages.length,
    );
  }
  const ttft = reply.ttftMs ?? context.ttftMs;
  const tps = reply.tokensPerSecond ?? context.tokensPerSecond;
  const signal = ex.abort.signal;

  if (stream) {
    if (!(await sleep(ttft, signal))) return;
    const boundaries = fault !== null ? [fault.afterTokens] : [];
    const chunkTokens = tps > 0 ? Math.max(1, Math.ceil(tps / 50)) : 16;
    await streamFrames(
      ex,
      messageFrames(message, { chunkTokens, boundaries }),
      tps,
      fault,
      context.firstByte,
    );
    return;
  }
  const generation = tps > 0 ? (reply.outputTokens / tps) * 1000 : 0;
  if (!(await sleep(ttft + generation, signal))) return;
  const text = JSON.stringify(message);
  const { res } = ex;
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  entry.status = 200;
  context.firstByte(ex, false);
  if (fault?.kind === "cut") {
    res.write(text.slice(0, Math.floor(text.length / 2)));
    entry.outputTokensSent = Math.min(fault.afterTokens, reply.outputTokens);
    entry.cut = true;
    res.destroy();
    return;
  }
  entry.outputTokensSent = reply.outputTokens;
  res.end(text);
}
