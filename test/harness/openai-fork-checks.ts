// What makes a child of an OpenAI-API parent faithful, read on the simulator's log: the parent's
// request bytes at the head of the child's, and the parent's prompt read from the cache.
import { OPENAI_CACHE_STEP_TOKENS, type RequestLogEntry } from "@forkd/sim";
import { expect } from "vitest";

/** The parent's body must be the child's, byte for byte, but for the items appended to `list`. */
export function expectParentBytes(parentRaw: string, childRaw: string, list: "messages" | "input") {
  const parent = JSON.parse(parentRaw) as Record<string, unknown>;
  const items = JSON.stringify(parent[list]);
  const at = parentRaw.indexOf(`"${list}":${items}`);
  expect(at).toBeGreaterThan(0);
  const end = at + `"${list}":`.length + items.length - 1; // just before the closing bracket
  expect(childRaw.slice(0, end)).toBe(parentRaw.slice(0, end));
  // Everything after the list (tools, sampling fields, the prompt_cache_key the parent sent…) too.
  expect(childRaw.endsWith(parentRaw.slice(end + 1))).toBe(true);
}

/** Reads at least the parent's prompt, less the unfinished last 128-token step. */
export function expectParentCacheRead(parent: RequestLogEntry, child: RequestLogEntry) {
  const parentPrompt = (parent.usage?.input_tokens ?? 0) + (parent.usage?.cache_read_input_tokens ?? 0);
  expect(child.usage?.cache_read_input_tokens ?? 0).toBeGreaterThanOrEqual(
    parentPrompt - OPENAI_CACHE_STEP_TOKENS,
  );
}
