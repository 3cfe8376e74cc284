// Reads a parent turn stored as JSON in the fixtures' shape, `{ request, response, betas }`: the
// request the parent sent, the reply it got and the betas it was sent with. Its fork prefix and
// its tool calls (for each child's fork call).
import { readFile } from "node:fs/promises";
import { createForkPrefix } from "@forkd/core";
import type { ForkCall, ForkPrefix } from "@forkd/protocol";
import { parseJsonText } from "@forkd/protocol/internal";
import { CliError } from "./errors.js";

/** A tool call of the parent's reply, as a child's fork call, and its prompt. */
export interface ParentToolCall {
  forkCall: ForkCall;
  /** The call's `prompt` (or `directive`) input, when it has one. */
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

function toolCallsOf(response: unknown): ParentToolCall[] {
  const content = (response as { content?: unknown } | undefined)?.content;
  if (!Array.isArray(content)) return [];
  const calls: ParentToolCall[] = [];
  for (const block of content as Record<string, unknown>[]) {
    if (block?.type !== "tool_use" || typeof block.id !== "string") continue;
    const input = (block.input ?? {}) as Record<string, unknown>;
    const forkCall: ForkCall = { tool_use_id: block.id };
    if (typeof input.description === "string") forkCall.description = input.description;
    const prompt =
      typeof input.prompt === "string"
        ? input.prompt
        : typeof input.directive === "string"
          ? input.directive
          : undefined;
    calls.push({ forkCall, prompt });
  }
  return calls;
}

/**
 * Builds a {@link ParentTurn} from parsed JSON: `{ request, response?, betas? }`, where `response`
 * may be `null` (no reply: the fork follows the request's last turn) and `betas` is the parent's
 * `anthropic-beta` list, as an array or as the header's comma-separated text.
 * @throws {@link CliError} (`config`) for the wrong shape.
 */
export function parentTurnOf(parsed: unknown, source: string): ParentTurn {
  const record = parsed as { request?: unknown; response?: unknown; betas?: unknown } | null;
  if (record === null || typeof record !== "object" || record.request === undefined) {
    throw new CliError("config", `${source}: expected a JSON object { request, response, betas }`);
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
    prefix = createForkPrefix(record.request, record.response ?? undefined, { betas });
  } catch (error) {
    throw new CliError("config", `${source}: ${(error as Error).message}`, { cause: error });
  }
  return {
    source,
    prefix,
    toolCalls: toolCallsOf(record.response ?? undefined),
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
  return parentTurnOf(parsed, path);
}
