// What "a faithful fork" means, checked on the simulator's log: a child's request equals its parent's
// request through the parent's last message (every other field byte for byte, in the parent's key
// order), then the parent's reply as { role, content }, with the parent's betas, and reads at least
// 95 % of its prompt from the cache the parent wrote.
import type { RequestLogEntry, Sim } from "@forkd/sim";
import { expect } from "vitest";

/** A logged request body. */
export type Body = Record<string, unknown> & { messages: Record<string, unknown>[] };
/** A reply of the simulator. */
export type Reply = { role: string; content: Record<string, unknown>[] };

/** A parent's turn: its logged request, the body, and the reply it got. */
export interface ParentTurnOnLog {
  entry: RequestLogEntry;
  request: Body;
  reply: Reply;
}

/** Asks the simulator again for the reply it gave to a logged request (its model is deterministic). */
export async function replyTo(sim: Sim, entry: RequestLogEntry, apiKey: string): Promise<Reply> {
  const { stream: _stream, ...body } = JSON.parse(entry.body) as Body;
  const response = await fetch(`${sim.url}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": apiKey,
      ...(entry.betas.length > 0 ? { "anthropic-beta": entry.betas.join(",") } : {}),
    },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Reply;
}

/** Asserts each child is a faithful fork of `turn` (see the module comment). */
export function expectFaithfulChildren(
  turn: ParentTurnOnLog,
  children: readonly RequestLogEntry[],
  count = 3,
): void {
  expect(children.length).toBeGreaterThanOrEqual(count);
  const inherited = turn.request.messages.length;
  for (const child of children) {
    expect(child.status, child.errorMessage ?? "").toBe(200);
    expect(child.betas).toEqual(turn.entry.betas);
    const body = JSON.parse(child.body) as Body;
    for (const key of Object.keys(turn.request)) {
      if (key === "messages" || key === "stream" || key === "max_tokens") continue;
      expect(JSON.stringify(body[key]), key).toBe(JSON.stringify(turn.request[key]));
    }
    expect(JSON.stringify(body.messages.slice(0, inherited))).toBe(JSON.stringify(turn.request.messages));
    expect(body.messages[inherited]).toEqual({ role: "assistant", content: turn.reply.content });
    expect(cacheReadShare(child)).toBeGreaterThanOrEqual(0.95);
  }
}

/** The share of a request's prompt read from the cache. */
export function cacheReadShare(entry: RequestLogEntry): number {
  const usage = entry.usage as {
    input_tokens: number;
    cache_creation_input_tokens: number;
    cache_read_input_tokens: number;
  };
  const prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  return usage.cache_read_input_tokens / prompt;
}
