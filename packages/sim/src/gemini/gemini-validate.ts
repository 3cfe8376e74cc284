// What the Gemini API refuses, with its wording: fields outside its request messages (it parses
// strictly), unknown models, malformed contents, a request that names a cache and also sets what
// the cache holds, and function responses that do not answer the call turn before them.
import { modelFacts } from "@forkd/protocol";
import { GeminiApiError, invalidArgument } from "./gemini-errors.js";

/** `GenerateContentRequest`'s body fields (the model is the URL's). */
const GENERATE_FIELDS = new Set(
  "contents tools toolConfig safetySettings systemInstruction generationConfig cachedContent serviceTier store".split(
    " ",
  ),
);
/** `CachedContent`'s writable fields. */
const CACHE_FIELDS = new Set(
  "model displayName contents systemInstruction tools toolConfig ttl expireTime".split(" "),
);
/** The data fields of a `Part` (its `data` oneof, as `@google/genai` 2.32's `Part` names them): exactly one. */
const PART_DATA = [
  "text",
  "inlineData",
  "fileData",
  "functionCall",
  "functionResponse",
  "executableCode",
  "codeExecutionResult",
  "toolCall",
  "toolResponse",
];
/** The other fields `@google/genai` 2.32 sends in a `Part` to the Gemini API. */
const PART_META = new Set([
  "thought",
  "thoughtSignature",
  "videoMetadata",
  "partMetadata",
  "mediaResolution",
  "mediaProcessing",
  "audioTranscription",
  "speechMetadata",
]);

/** Whether the simulator serves `model` on the Gemini routes: a Gemini family in forkd's model facts. */
export function isSimGeminiModel(model: string): boolean {
  return model.startsWith("gemini-") && modelFacts(model)?.cacheStorageUsdPerMTokHour !== undefined;
}

/** A model the simulator does not serve, as the API says it. */
export function modelNotFound(model: string, method = "generateContent"): GeminiApiError {
  return new GeminiApiError(
    404,
    `models/${model} is not found for API version v1beta, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`,
  );
}

function object(body: unknown, fields: Set<string>, message: string): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw invalidArgument(`Invalid JSON payload received. Expected an object for ${message}.`);
  const record = body as Record<string, unknown>;
  for (const key of Object.keys(record))
    if (!fields.has(key))
      throw invalidArgument(`Invalid JSON payload received. Unknown name "${key}": Cannot find field.`);
  return record;
}

/** `contents` as the API checks them (`where` names the field in messages). */
export function validateContents(contents: unknown, where: string, required: boolean): unknown[] {
  if (contents === undefined && !required) return [];
  if (!Array.isArray(contents) || (required && contents.length === 0))
    throw invalidArgument(`* ${where}: contents is not specified\n`);
  contents.forEach((content, i) => {
    const c = content as { role?: unknown; parts?: unknown } | null;
    if (c === null || typeof c !== "object") throw invalidArgument(`* ${where}[${i}]: must be an object\n`);
    if (c.role !== undefined && c.role !== "user" && c.role !== "model")
      throw invalidArgument(`Please use a valid role: user, model.`);
    if (!Array.isArray(c.parts) || c.parts.length === 0)
      throw invalidArgument(`* ${where}[${i}].parts: contents.parts must not be empty.\n`);
    c.parts.forEach((part: unknown, j: number) => {
      if (part === null || typeof part !== "object")
        throw invalidArgument(`* ${where}[${i}].parts[${j}]: must be an object\n`);
      const keys = Object.keys(part);
      for (const key of keys)
        if (!PART_DATA.includes(key) && !PART_META.has(key))
          throw invalidArgument(
            `Invalid JSON payload received. Unknown name "${key}" at '${where}[${i}].parts[${j}]': Cannot find field.`,
          );
      if (keys.filter((key) => PART_DATA.includes(key)).length !== 1)
        throw invalidArgument(
          `* ${where}[${i}].parts[${j}].data: required oneof field 'data' must have one initialized field\n`,
        );
    });
  });
  return contents;
}

function partsWith(content: unknown, field: string): number {
  const parts = (content as { parts?: Record<string, unknown>[] }).parts ?? [];
  return parts.filter((part) => part[field] !== undefined).length;
}

/**
 * A function call turn must be answered by the next turn, one function response per call (the
 * whole conversation: a cache's contents, then the request's).
 */
export function checkFunctionTurns(contents: readonly unknown[]): void {
  contents.forEach((content, i) => {
    const calls = partsWith(content, "functionCall");
    if (calls === 0 || i === contents.length - 1) return;
    const next = contents[i + 1];
    const responses = partsWith(next, "functionResponse");
    if (responses === 0)
      throw invalidArgument(
        "Please ensure that function response turn comes immediately after a function call turn.",
      );
    if (responses !== calls)
      throw invalidArgument(
        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
      );
  });
  contents.forEach((content, i) => {
    if (
      partsWith(content, "functionResponse") > 0 &&
      (i === 0 || partsWith(contents[i - 1], "functionCall") === 0)
    )
      throw invalidArgument(
        "Please ensure that function response turn comes immediately after a function call turn.",
      );
  });
}

/** A generateContent body, checked (what a named cache forbids included). */
export function validateGenerateRequest(body: unknown): Record<string, unknown> {
  const record = object(body, GENERATE_FIELDS, "GenerateContentRequest");
  validateContents(record.contents, "GenerateContentRequest.contents", true);
  if (record.cachedContent !== undefined) {
    if (typeof record.cachedContent !== "string")
      throw invalidArgument("Invalid value at 'cached_content' (TYPE_STRING)");
    if (
      record.systemInstruction !== undefined ||
      record.tools !== undefined ||
      record.toolConfig !== undefined
    )
      throw invalidArgument(
        "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.",
      );
  }
  return record;
}

/** A cachedContents.create body, checked. */
export function validateCacheRequest(body: unknown): Record<string, unknown> {
  const record = object(body, CACHE_FIELDS, "CachedContent");
  if (typeof record.model !== "string" || record.model === "")
    throw invalidArgument("* CreateCachedContentRequest.cached_content.model: model is required\n");
  validateContents(record.contents, "CachedContent.contents", false);
  if (record.ttl !== undefined && record.expireTime !== undefined)
    throw invalidArgument("* CachedContent: only one of ttl and expire_time may be set\n");
  return record;
}
