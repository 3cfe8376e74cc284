// The recursion guard: a fork must not fork. Two independent checks, either of which refuses: the
// running agent's query source, and a directive block this library wrote found in the history.
import type { MessageParam } from "@forkd/protocol";
import { FORK_BOILERPLATE_OPENING, parseDirectiveBlock } from "./directive.js";
import { RecursionGuardError } from "./errors.js";

/** Prefix of the query source of every fork's turn loop: `fork:<run_id>`. */
export const FORK_QUERY_SOURCE_PREFIX = "fork:";

/** The query source a fork's turn loop runs under. */
export function forkQuerySource(runId: string): string {
  return `${FORK_QUERY_SOURCE_PREFIX}${runId}`;
}

/** True when `querySource` is a fork's (see {@link forkQuerySource}). */
export function isForkQuerySource(querySource: string | undefined): boolean {
  return querySource?.startsWith(FORK_QUERY_SOURCE_PREFIX) === true;
}

/** Where a fork's directive block was found. */
export interface ForkMarkerMatch {
  messageIndex: number;
  blockIndex: number;
  /** The run id signed into the block. */
  runId: string;
}

/**
 * The first directive block this library wrote in `messages`, or `null`. Only a top-level text block
 * of a user message counts, and only when it starts with the exact opening tag and its signature
 * matches: the marker inside a tool result, a file's contents, an assistant's text or a quotation
 * anywhere else is not a fork's directive.
 */
export function findForkMarker(messages: readonly MessageParam[]): ForkMarkerMatch | null {
  for (let messageIndex = 0; messageIndex < messages.length; messageIndex++) {
    const message = messages[messageIndex]!;
    if (message.role !== "user" || !Array.isArray(message.content)) continue;
    for (let blockIndex = 0; blockIndex < message.content.length; blockIndex++) {
      const block = message.content[blockIndex] as { type?: unknown; text?: unknown };
      if (block.type !== "text" || typeof block.text !== "string") continue;
      if (!block.text.startsWith(FORK_BOILERPLATE_OPENING)) continue;
      const parsed = parseDirectiveBlock(block.text);
      if (parsed !== null) return { messageIndex, blockIndex, runId: parsed.runId };
    }
  }
  return null;
}

/** What the guard looks at. */
export interface RecursionGuardInput {
  /** Query source of the agent that asks to fork. */
  querySource?: string | undefined;
  /** The asking agent's conversation (its last request's messages). */
  messages?: readonly MessageParam[] | undefined;
}

/** The guard's verdict. */
export type RecursionCheck = { allowed: true } | { allowed: false; error: RecursionGuardError };

/** Runs both checks: the query source first (cheap), then the history scan. */
export function checkForkRecursion(input: RecursionGuardInput): RecursionCheck {
  if (isForkQuerySource(input.querySource)) {
    return {
      allowed: false,
      error: new RecursionGuardError(
        "query_source",
        `the agent asking to fork runs under the fork query source "${input.querySource}".`,
        { querySource: input.querySource as string },
      ),
    };
  }
  const marker = findForkMarker(input.messages ?? []);
  if (marker !== null) {
    return {
      allowed: false,
      error: new RecursionGuardError(
        "history_marker",
        `the conversation holds the directive block of fork ${marker.runId} (message ${marker.messageIndex}).`,
        { forkRunId: marker.runId },
      ),
    };
  }
  return { allowed: true };
}

/** Throws the guard's {@link RecursionGuardError} when {@link checkForkRecursion} refuses. */
export function assertMayFork(input: RecursionGuardInput): void {
  const check = checkForkRecursion(input);
  if (!check.allowed) throw check.error;
}
