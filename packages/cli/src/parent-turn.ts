// Reads a parent turn stored as JSON: in the fixtures' shape, `{ request, response, betas }` (the
// request the parent sent, the reply it got and the betas it was sent with), or as `forkd capture`
// writes another API's turn, `{ api, path, request, response }`. Its fork prefix and its tool calls
// (for each child's fork call).
import { readFile } from "node:fs/promises";
import { createForkPrefix, describeForkCall } from "@forkd/core";
import { type VerbatimApi, verbatimValuesOf } from "@forkd/core/internal";
import type { ForkCall, ForkPrefix } from "@forkd/protocol";
import { memberTextOf, parseJsonText } from "@forkd/protocol/internal";
import {
  type AssembledMessage,
  forkPrefixOfTurn,
  type ToolCall,
  type TurnApi,
  type TurnReply,
  turnApi,
} from "@forkd/proxy";
import { CliError } from "./errors.js";

/** A tool call of the parent's reply, as a child's fork call, and its prompt. */
export interface ParentToolCall {
  forkCall: ForkCall;
  /** The call's `prompt` (or `directive`) input, when it has a non-empty one. */
  prompt: string | undefined;
}

/** A parent turn read from a file. */
export interface ParentTurn {
  /** Where it came from (a path, or the fixture's name). */
  source: string;
  prefix: ForkPrefix;
  /** The reply's `tool_use` blocks, in order. */
  toolCalls: ParentToolCall[];
  /** Rough size of the request, characters / 4. @unit tokens */
  approxTokens: number;
}

/** A tool call of the parent's reply as a child's fork call, read as core reads a fork call's input. */
function parentToolCall(call: ToolCall): ParentToolCall {
  const { directive, description } = describeForkCall(call);
  const forkCall: ForkCall = { tool_use_id: call.id };
  if (description !== undefined) forkCall.description = description;
  return { forkCall, prompt: directive === "" ? undefined : directive };
}

function anthropicToolCalls(response: unknown): ParentToolCall[] {
  const content = (response as { content?: unknown } | undefined)?.content;
  if (!Array.isArray(content)) return [];
  return turnApi("anthropic")
    .toolCalls({ role: "assistant", content } as AssembledMessage)
    .map(parentToolCall);
}

/** The APIs other than Anthropic's whose turns `forkd capture` writes with their `api`. */
const NATIVE_APIS: readonly TurnApi[] = ["openai-chat", "openai-responses", "gemini"];

/**
 * A turn `forkd capture` recorded from an agent on another API (`{ api, path, request, response }`):
 * forked from its native request and reply, so the children's first bytes are the parent's.
 */
function nativeParentTurn(
  record: Record<string, unknown>,
  api: TurnApi,
  source: string,
  text: string | undefined,
): ParentTurn {
  const { request, response } = record;
  const path = typeof record.path === "string" ? record.path : "";
  if (request === null || typeof request !== "object" || Array.isArray(request) || response == null) {
    throw new CliError(
      "config",
      `${source}: expected { api, path, request, response } with a request object`,
    );
  }
  // The values the agent wrote otherwise than JavaScript, as it wrote them (not yet for Gemini).
  const requestText = text === undefined || api === "gemini" ? undefined : memberTextOf(text, "request");
  const turn = {
    api,
    path,
    request: request as Record<string, unknown>,
    response: response as TurnReply,
    betas: [],
    ...(requestText === undefined
      ? {}
      : { verbatim: verbatimValuesOf(request as Record<string, unknown>, requestText, api as VerbatimApi) }),
  };
  let prefix: ForkPrefix;
  try {
    prefix = forkPrefixOfTurn(turn);
  } catch (error) {
    throw new CliError("config", `${source}: ${(error as Error).message}`, { cause: error });
  }
  return {
    source,
    prefix,
    toolCalls: turnApi(api).toolCalls(turn.response, turn.request).map(parentToolCall),
    approxTokens: Math.round(JSON.stringify(request).length / 4),
  };
}

/**
 * Builds a {@link ParentTurn} from parsed JSON: `{ request, response?, betas? }`, where `response`
 * may be `null` (no reply: the fork follows the request's last turn) and `betas` is the parent's
 * `anthropic-beta` list, as an array or as the header's comma-separated text. `text`, the JSON's own
 * text when known, gives the request as written: values in it that JavaScript writes differently
 * (`1.0`, from an agent in another language) are sent by the children as written.
 * @throws {@link CliError} (`config`) for the wrong shape.
 */
export function parentTurnOf(parsed: unknown, source: string, text?: string): ParentTurn {
  const record = parsed as { api?: unknown; request?: unknown; response?: unknown; betas?: unknown } | null;
  if (record === null || typeof record !== "object" || record.request === undefined) {
    throw new CliError("config", `${source}: expected a JSON object { request, response, betas }`);
  }
  if (record.api !== undefined && record.api !== "anthropic") {
    const api = NATIVE_APIS.find((name) => name === record.api);
    if (api === undefined) {
      throw new CliError(
        "config",
        `${source}: api ${JSON.stringify(record.api)} is none of anthropic, ${NATIVE_APIS.join(", ")}`,
      );
    }
    return nativeParentTurn(record as Record<string, unknown>, api, source, text);
  }
  const betas = typeof record.betas === "string" ? splitBetaHeader(record.betas) : record.betas;
  if (betas !== undefined && !(Array.isArray(betas) && betas.every((b) => typeof b === "string"))) {
    throw new CliError(
      "config",
      `${source}: betas must be a list of strings (or the anthropic-beta header's text)`,
    );
  }
  let prefix: ForkPrefix;
  try {
    const requestText = text === undefined ? undefined : memberTextOf(text, "request");
    prefix = createForkPrefix(record.request, record.response ?? undefined, { betas, requestText });
  } catch (error) {
    throw new CliError("config", `${source}: ${(error as Error).message}`, { cause: error });
  }
  return {
    source,
    prefix,
    toolCalls: anthropicToolCalls(record.response ?? undefined),
    approxTokens: Math.round(JSON.stringify(prefix.params).length / 4),
  };
}

/** The names in an `anthropic-beta` header: comma-separated, spaces around them ignored. */
export function splitBetaHeader(header: string): string[] {
  return header
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
}

/** Reads a parent turn from `path`. @throws {@link CliError} (`config`) when unreadable or malformed. */
export async function readParentTurn(path: string): Promise<ParentTurn> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new CliError("config", `cannot read ${path}: ${(error as NodeJS.ErrnoException).message}`, {
      cause: error,
    });
  }
  let parsed: unknown;
  try {
    parsed = parseJsonText(text);
  } catch (error) {
    throw new CliError("config", `${path} is not JSON: ${(error as Error).message}`, { cause: error });
  }
  return parentTurnOf(parsed, path, text);
}
