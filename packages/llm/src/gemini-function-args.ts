// Function-call arguments as the model wrote them, where `@google/genai` may misread them. The SDK
// parses each streamed chunk with the native JSON.parse, and V8 12.8+ (Node 24 and later) can read an
// escaped object key as another string once an earlier parse left a matching object shape behind
// (https://github.com/nodejs/node/issues/63785; docs/protocol.md, "Conventions"). So the client keeps
// a copy of the streamed reply, and where a chunk has an escaped key, the calls' arguments are read
// again from it with forkd's own reader.
import type { GeminiPart } from "@forkd/core";
import { hasEscapedKey, parseJsonText } from "@forkd/protocol/internal";

/** A fetch that sends `body`, and the text of the reply it got, once the reply has ended. */
export interface KeptReplyFetch {
  fetch: typeof fetch;
  /** The reply's text; undefined when there was none or it could not be read to its end. */
  reply(): Promise<string | undefined>;
}

/** A fetch that sends `body`, serialised once, in place of the body the SDK made. */
export function sendingBody(body: Record<string, unknown>): typeof fetch {
  const text = JSON.stringify(body);
  return (input, init) => fetch(input, { ...init, body: text });
}

/** Like {@link sendingBody}, and keeps a copy of the reply's body (a tee: the SDK reads the other). */
export function sendingBodyKeepingReply(body: Record<string, unknown>): KeptReplyFetch {
  const send = sendingBody(body);
  let kept: Promise<string | undefined> = Promise.resolve(undefined);
  return {
    fetch: async (input, init) => {
      const response = await send(input, init);
      if (response.body === null) return response;
      const [forSdk, forCopy] = response.body.tee();
      kept = new Response(forCopy).text().catch(() => undefined);
      return new Response(forSdk, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    },
    reply: () => kept,
  };
}

/**
 * Sets each `functionCall` part's `args` in `parts` to those of the same call in `sse` (the streamed
 * reply: `data:` lines of JSON chunks), read with {@link parseJsonText}, when any chunk has an
 * escaped key. The calls pair up in order; when the counts disagree, `parts` stay as the SDK read them.
 */
export function restoreFunctionCallArgs(parts: GeminiPart[], sse: string | undefined): void {
  if (sse === undefined || !hasEscapedKey(sse)) return;
  const streamed: unknown[] = [];
  for (const line of sse.split(/\r?\n/)) {
    if (!line.startsWith("data:")) continue;
    let chunk: { candidates?: { content?: { parts?: GeminiPart[] } }[] };
    try {
      chunk = parseJsonText(line.slice("data:".length).trim()) as typeof chunk;
    } catch {
      return; // not the reply the SDK read: keep its reading
    }
    for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
      const call = part.functionCall as { args?: unknown } | undefined;
      if (call !== undefined) streamed.push(call.args);
    }
  }
  const calls = parts.filter((part) => part.functionCall !== undefined);
  if (calls.length !== streamed.length) return;
  calls.forEach((part, index) => {
    part.functionCall = { ...(part.functionCall as Record<string, unknown>), args: streamed[index] };
  });
}
