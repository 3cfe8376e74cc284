// The simulator's Gemini routes (`/v1beta/…`): `models/{model}:generateContent`,
// `models/{model}:streamGenerateContent` (`alt=sse`, or a JSON array without it) and the
// `cachedContents` resource (create, get, list, patch of its expiry, delete). A request is checked
// as the API checks it, answered by the same scripted model as the Anthropic route (through forkd's
// canonical view of the conversation), charged by Gemini's caching rules (gemini-cache.ts), and
// answered in Google's formats. The key comes as `x-goog-api-key` or `?key=`.
import { geminiRequestToCanonical } from "@forkd/core";
import { acceptWithUsage, cacheScopeOf } from "../accept.js";
import { SimApiError } from "../errors.js";
import { type Exchange, parseJson, readBody, sleep } from "../exchange.js";
import { runScriptedModel } from "../model.js";
import type { MessagesRouteContext } from "../routes/messages.js";
import type { MessagesRequest } from "../types.js";
import { type CachedContentEntry, type GeminiCaches, parseTtl } from "./gemini-cache.js";
import { GeminiApiError, invalidArgument, sendGeminiError } from "./gemini-errors.js";
import {
  checkFunctionTurns,
  isSimGeminiModel,
  modelNotFound,
  validateCacheRequest,
  validateGenerateRequest,
} from "./gemini-validate.js";

/** What the Gemini routes need of the server. */
export interface GeminiRouteContext extends MessagesRouteContext {
  geminiCaches: GeminiCaches;
  /** The clock caches expire by. @unit ms since epoch */
  now(): number;
}

/** Whether `path` is one of the Gemini API's. */
export function isGeminiPath(path: string): boolean {
  return path.startsWith("/v1beta/");
}

/** Answers a Gemini API request; whatever it throws becomes an error in Google's shape. */
export function geminiRoute(context: GeminiRouteContext, ex: Exchange, url: URL): void {
  serve(context, ex, url).catch((err: unknown) => {
    const error =
      err instanceof GeminiApiError
        ? err
        : err instanceof SimApiError
          ? err.status === 401
            ? invalidArgument("API key not valid. Please pass a valid API key.")
            : new GeminiApiError(err.status, err.message, { ...err.headers })
          : new GeminiApiError(500, `Internal simulator error: ${(err as Error)?.message ?? String(err)}`);
    sendGeminiError(ex, error);
  });
}

/** The request's key: `x-goog-api-key`, else `?key=`. */
function authenticate(context: GeminiRouteContext, ex: Exchange, url: URL): string {
  const header = ex.req.headers["x-goog-api-key"];
  const key = typeof header === "string" && header !== "" ? header : url.searchParams.get("key");
  if (key === null || key === "")
    throw new GeminiApiError(
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  return context.authenticate(ex, key);
}

async function serve(context: GeminiRouteContext, ex: Exchange, url: URL): Promise<void> {
  const path = ex.entry.path;
  const method = ex.req.method ?? "GET";
  const generate = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
  const caches = /^\/v1beta\/cachedContents(?:\/([A-Za-z0-9_-]+))?$/.exec(path);
  if (generate === null && caches === null)
    throw new GeminiApiError(404, `The requested URL ${path} was not found on this server.`);
  if (generate !== null && method !== "POST")
    throw new GeminiApiError(405, `Method ${method} not allowed on ${path}`);
  const raw = await readBody(ex, context.maxBody);
  if (raw === undefined) return;
  const scope = cacheScopeOf(context, ex, authenticate(context, ex, url));
  const body = (): unknown => {
    try {
      return raw.size === 0 ? {} : parseJson(raw);
    } catch {
      throw invalidArgument("Invalid JSON payload received. Unexpected token.");
    }
  };
  if (generate !== null) {
    const stream = generate[2] === "streamGenerateContent";
    return generateContent(context, ex, scope, decodeURIComponent(generate[1]!), body(), {
      stream,
      sse: url.searchParams.get("alt") === "sse",
    });
  }
  const id = caches![1];
  const store = context.geminiCaches;
  if (id === undefined) {
    if (method === "POST") {
      const created = createCache(context, scope, body());
      // Creating a cache bills its tokens as input (the log keeps them as written).
      ex.inputUsage = {
        input_tokens: 0,
        cache_creation_input_tokens: created.tokens,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: created.tokens, ephemeral_1h_input_tokens: 0 },
        service_tier: "standard",
      };
      return send(context, ex, resourceOf(created));
    }
    if (method === "GET") {
      const size = Number(url.searchParams.get("pageSize") ?? "1000");
      const all = store.list(scope);
      const start = Number(url.searchParams.get("pageToken") ?? "0") || 0;
      const page = all.slice(start, start + Math.max(1, Math.min(size || 1000, 1000)));
      const next = start + page.length < all.length ? String(start + page.length) : undefined;
      return send(context, ex, {
        ...(page.length > 0 ? { cachedContents: page.map(resourceOf) } : {}),
        ...(next === undefined ? {} : { nextPageToken: next }),
      });
    }
    throw new GeminiApiError(405, `Method ${method} not allowed on ${path}`);
  }
  if (method === "GET") return send(context, ex, resourceOf(store.get(scope, id)));
  if (method === "DELETE") {
    store.delete(scope, id);
    return send(context, ex, {});
  }
  if (method === "PATCH") {
    const patch = body() as { ttl?: unknown; expireTime?: unknown };
    // Without an update mask, the fields the body sets are the update (AIP-134; the SDK sends none).
    const mask =
      url.searchParams.get("updateMask") ??
      (patch.ttl !== undefined ? "ttl" : patch.expireTime !== undefined ? "expireTime" : "");
    let expiresAt: number;
    if (mask === "ttl") expiresAt = context.now() + parseTtl(patch.ttl);
    else if (mask === "expireTime" || mask === "expire_time")
      expiresAt = Date.parse(String(patch.expireTime));
    else throw invalidArgument("Only ttl or expire_time can be updated on a CachedContent (updateMask).");
    if (!Number.isFinite(expiresAt)) throw invalidArgument("Invalid value at 'cached_content.expire_time'");
    return send(context, ex, resourceOf(store.update(scope, id, expiresAt)));
  }
  throw new GeminiApiError(405, `Method ${method} not allowed on ${path}`);
}

function send(context: GeminiRouteContext, ex: Exchange, payload: unknown): void {
  const text = JSON.stringify(payload);
  ex.res.writeHead(200, {
    "content-type": "application/json; charset=UTF-8",
    "content-length": Buffer.byteLength(text),
  });
  ex.entry.status = 200;
  context.firstByte(ex, false);
  ex.res.end(text);
}

/** A cache as the API returns it: its metadata, never its contents. */
function resourceOf(entry: CachedContentEntry): Record<string, unknown> {
  return {
    name: `cachedContents/${entry.id}`,
    model: entry.model,
    ...(entry.displayName === undefined ? {} : { displayName: entry.displayName }),
    createTime: new Date(entry.createdAt).toISOString(),
    updateTime: new Date(entry.updatedAt).toISOString(),
    expireTime: new Date(entry.expiresAt).toISOString(),
    usageMetadata: { totalTokenCount: entry.tokens },
  };
}

function modelName(model: string): string {
  const bare = model.replace(/^models\//, "");
  if (!isSimGeminiModel(bare)) throw modelNotFound(bare, "createCachedContent");
  return `models/${bare}`;
}

function createCache(context: GeminiRouteContext, scope: string, raw: unknown): CachedContentEntry {
  const body = validateCacheRequest(raw);
  const model = modelName(String(body.model));
  const contents = (body.contents as unknown[] | undefined) ?? [];
  checkFunctionTurns(contents);
  const expiresAt = body.expireTime === undefined ? undefined : Date.parse(String(body.expireTime));
  if (expiresAt !== undefined && !Number.isFinite(expiresAt))
    throw invalidArgument("Invalid value at 'cached_content.expire_time'");
  return context.geminiCaches.create({
    scope,
    model,
    ...(typeof body.displayName === "string" ? { displayName: body.displayName } : {}),
    contents,
    ...(body.systemInstruction === undefined ? {} : { systemInstruction: body.systemInstruction }),
    ...(body.tools === undefined ? {} : { tools: body.tools }),
    ...(body.toolConfig === undefined ? {} : { toolConfig: body.toolConfig }),
    ttlMs: body.ttl === undefined ? undefined : parseTtl(body.ttl),
    expiresAt,
  });
}

async function generateContent(
  context: GeminiRouteContext,
  ex: Exchange,
  scope: string,
  model: string,
  raw: unknown,
  mode: { stream: boolean; sse: boolean },
): Promise<void> {
  const entry = ex.entry;
  const bare = model.replace(/^models\//, "");
  entry.model = bare;
  entry.stream = mode.stream;
  if (!isSimGeminiModel(bare)) throw modelNotFound(bare);
  const body = validateGenerateRequest(raw);
  const requestContents = body.contents as unknown[];
  let cached: CachedContentEntry | undefined;
  if (typeof body.cachedContent === "string") {
    const id = /^cachedContents\/([A-Za-z0-9_-]+)$/.exec(body.cachedContent)?.[1];
    if (id === undefined) throw invalidArgument(`Invalid resource name: ${body.cachedContent}`);
    cached = context.geminiCaches.get(scope, id);
    if (cached.model !== `models/${bare}`)
      throw invalidArgument(
        `Model used by GenerateContent request (models/${bare}) and CachedContent (${cached.model}) has to be the same!`,
      );
  }
  const settings = cached ?? body;
  const contents = [...(cached?.contents ?? []), ...requestContents];
  checkFunctionTurns(contents);
  const canonical = geminiRequestToCanonical(
    {
      contents,
      ...(settings.systemInstruction === undefined ? {} : { systemInstruction: settings.systemInstruction }),
      ...(settings.tools === undefined ? {} : { tools: settings.tools }),
      ...(body.generationConfig === undefined ? {} : { generationConfig: body.generationConfig }),
    },
    bare,
  );
  const reply = runScriptedModel({
    ...canonical,
    max_tokens: canonical.max_tokens ?? 8192,
  } as unknown as MessagesRequest);
  entry.turn = reply.turn;
  if (reply.fault?.spec.kind === "status") {
    const fault = reply.fault.spec;
    throw new GeminiApiError(
      fault.status,
      fault.status === 429
        ? "Resource has been exhausted (e.g. check quota)."
        : `Simulated fault (HTTP ${fault.status})`,
      fault.retryAfterSeconds === undefined ? {} : { "retry-after": String(fault.retryAfterSeconds) },
    );
  }
  const plan = context.geminiCaches.plan(scope, bare, settings, requestContents, cached);
  acceptWithUsage(context, ex, { ...plan, outputTokens: reply.outputTokens, stream: mode.stream });
  const text = reply.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
  // Gemini's function calls carry no id (the API's own, not Vertex's); the client pairs by name.
  const calls = reply.content.flatMap((b) =>
    b.type === "tool_use" ? [{ name: b.name, args: b.input }] : [],
  );
  entry.stopReason = calls.length > 0 ? "tool_use" : reply.stopReason;
  if (!(await sleep(reply.ttftMs ?? context.ttftMs, ex.abort.signal))) return;
  const usageMetadata = {
    promptTokenCount: plan.promptTokens,
    candidatesTokenCount: reply.outputTokens,
    totalTokenCount: plan.promptTokens + reply.outputTokens,
    ...(plan.cachedTokens > 0 ? { cachedContentTokenCount: plan.cachedTokens } : {}),
    promptTokensDetails: [{ modality: "TEXT", tokenCount: plan.promptTokens }],
    ...(plan.cachedTokens > 0
      ? { cacheTokensDetails: [{ modality: "TEXT", tokenCount: plan.cachedTokens }] }
      : {}),
  };
  const responseId = ex.id.slice(7);
  const finishReason = reply.stopReason === "max_tokens" ? "MAX_TOKENS" : "STOP";
  const chunk = (parts: unknown[], last: boolean) => ({
    candidates: [
      {
        content: { parts, role: "model" },
        ...(last ? { finishReason } : {}),
        index: 0,
      },
    ],
    usageMetadata: last
      ? usageMetadata
      : { promptTokenCount: plan.promptTokens, totalTokenCount: plan.promptTokens },
    modelVersion: bare,
    responseId,
  });
  const parts: unknown[][] = [];
  for (let i = 0; i < text.length; i += 64) parts.push([{ text: text.slice(i, i + 64) }]);
  if (calls.length > 0) parts.push(calls.map((call) => ({ functionCall: call })));
  if (parts.length === 0) parts.push([{ text: "" }]);
  const { res } = ex;
  let payload: string;
  if (!mode.stream) {
    payload = JSON.stringify(
      chunk(text === "" ? parts.flat() : [{ text }, ...calls.map((c) => ({ functionCall: c }))], true),
    );
    res.writeHead(200, {
      "content-type": "application/json; charset=UTF-8",
      "content-length": Buffer.byteLength(payload),
    });
  } else {
    const chunks = parts.map((p, i) => chunk(p, i === parts.length - 1));
    payload = mode.sse
      ? chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join("")
      : `[${chunks.map((c) => JSON.stringify(c)).join(",\r\n")}]`;
    res.writeHead(200, {
      "content-type": mode.sse ? "text/event-stream" : "application/json; charset=UTF-8",
    });
  }
  entry.status = 200;
  context.geminiCaches.commit(plan);
  context.firstByte(ex, mode.stream);
  entry.outputTokensSent = reply.outputTokens;
  res.end(payload);
}
