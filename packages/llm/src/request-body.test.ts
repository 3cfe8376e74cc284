// The spliced body: the bytes of JSON.stringify, whatever the body holds, with the sealed prefix's
// bytes serialised once and shared by every child.
import { readFileSync } from "node:fs";
import Anthropic from "@anthropic-ai/sdk";
import { createForkPrefix } from "@forkd/core";
import { prepareForkRun, sealSharedPrefix, tieVerbatimTexts } from "@forkd/core/internal";
import type { AssistantMessage, CacheSafeParams, ForkPrefix } from "@forkd/protocol";
import { memberTextOf, parseJsonText } from "@forkd/protocol/internal";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import {
  bodyChunks,
  fetchBody,
  type SerialisedBody,
  SINGLE_CHUNK_MAX_BYTES,
  serialisedBodyStream,
  serialiseSealedBody,
} from "./request-body.js";

function fixturePrefix(name: "4k" | "48k"): ForkPrefix {
  const url = new URL(`../../fixtures/turns/parent-turn-${name}.json`, import.meta.url);
  const fixture = JSON.parse(readFileSync(url, "utf8")) as {
    request: CacheSafeParams;
    response: AssistantMessage;
  };
  return createForkPrefix(fixture.request, fixture.response);
}

function childBody(prefix: ForkPrefix, i: number): Record<string, unknown> {
  const { request } = prepareForkRun({
    runId: `child-${i}`,
    prefix,
    cacheShared: true,
    directive: `Slice ${i}: é ✓ 🚀 "quoted" \\ \u2028`,
  });
  return { ...request, stream: true };
}

// Read back through the stream fetch is given, so the test covers what goes on the wire.
async function text(body: SerialisedBody | undefined): Promise<string> {
  if (body === undefined) throw new Error("the body was not spliced");
  const bytes = Buffer.from(await new Response(serialisedBodyStream(body)).arrayBuffer());
  expect(bytes.byteLength).toBe(body.byteLength);
  return bytes.toString("utf8");
}

describe("serialiseSealedBody", () => {
  for (const name of ["4k", "48k"] as const) {
    it(`${name}: a child of a sealed prefix is JSON.stringify's bytes, for every sibling`, async () => {
      const prefix = sealSharedPrefix(fixturePrefix(name));
      for (const i of [1, 2, 3]) {
        const body = childBody(prefix, i);
        expect(await text(serialiseSealedBody(body))).toBe(JSON.stringify(body));
      }
    });
  }

  it("sends the values a Python parent wrote as it wrote them (`1.0`, all of a big integer's digits)", async () => {
    // The bytes the Anthropic Python SDK sent (test/fixtures/python-sdk/record.py).
    const url = new URL("../../../test/fixtures/python-sdk/parent-request.json", import.meta.url);
    const parentText = readFileSync(url, "utf8");
    const forked = (tie: boolean) => {
      const prefix = createForkPrefix(parseJsonText(parentText), undefined, { requestText: parentText });
      return childBody(tie ? tieVerbatimTexts(prefix) : sealSharedPrefix(prefix), 1);
    };
    const body = forked(true);
    const child = await text(serialiseSealedBody(body));
    // Everything of the parent's up to its last message, which the child's directive joins, byte for
    // byte; and its tools, which come after the messages in this body.
    const messages = memberTextOf(parentText, "messages")!;
    const inherited = messages.slice(0, messages.lastIndexOf(',{"role":"user"') + 1);
    expect(child.startsWith(`{"max_tokens":4096,"messages":${inherited}`)).toBe(true);
    expect(child).toContain(`"tools":${memberTextOf(parentText, "tools")!}`);
    expect(child).toContain('"min_score":2.0}');
    // Without the texts tied, JavaScript's writing: what the child would have sent.
    const plain = await text(serialiseSealedBody(forked(false)));
    expect(plain).not.toContain('"default":1.0');
    expect(plain).toContain('"min_score":2}');
  });

  it("leaves a body without a sealed value to the caller", () => {
    expect(serialiseSealedBody(childBody(fixturePrefix("4k"), 1))).toBeUndefined();
  });

  it("writes what JSON.stringify writes around sealed values: omitted members, nulls in arrays, escapes, key order", async () => {
    const shared = sealSharedPrefix(fixturePrefix("4k"));
    const messages = shared.params.messages;
    const body = {
      z_first: "keys keep their order",
      'key "quoted" \n': 1,
      skipped: undefined,
      fn: () => 1,
      system: shared.params.system,
      messages: [
        ...messages,
        { role: "user", content: [undefined, { type: "text", text: "\ud800 lone", extra: undefined }, null] },
        messages[0],
      ],
      numbers: [Number.NaN, -0, 1e21, Number.POSITIVE_INFINITY],
      nested: { deep: { deeper: { deepest: [{ a: undefined, b: [undefined] }] } } },
      tools: shared.params.tools,
      stream: true,
    };
    expect(await text(serialiseSealedBody(body))).toBe(JSON.stringify(body));
  });

  it("reuses the prefix's bytes: a sealed run whose members changed is serialised anew, not taken from the cache", async () => {
    const prefix = sealSharedPrefix(fixturePrefix("4k"));
    const body = childBody(prefix, 1);
    const first = await text(serialiseSealedBody(body));
    // The same run of messages cut short, and with one member replaced by an equal but unsealed copy.
    const messages = body.messages as unknown[];
    const shorter = { ...body, messages: messages.slice(1) };
    const copied = { ...body, messages: [structuredClone(messages[0]), ...messages.slice(1)] };
    expect(await text(serialiseSealedBody(shorter))).toBe(JSON.stringify(shorter));
    expect(await text(serialiseSealedBody(copied))).toBe(first);
  });

  it("hands every child the same buffers of the shared prefix, and reading a body leaves them whole", async () => {
    const prefix = sealSharedPrefix(fixturePrefix("4k"));
    const one = serialiseSealedBody(childBody(prefix, 1));
    const two = serialiseSealedBody(childBody(prefix, 2));
    const shared = one?.parts.filter((part) => two?.parts.includes(part)) ?? [];
    // The parent's messages, its tools and its system: each the one cached buffer, not a copy.
    expect(shared.length).toBeGreaterThanOrEqual(2);
    const sharedBytes = shared.reduce((sum, part) => sum + part.byteLength, 0);
    expect(sharedBytes).toBeGreaterThan(0.9 * (one?.byteLength ?? 0));
    // A stream that transferred its chunks would detach them: the next child would send nothing.
    await text(one);
    expect(shared.reduce((sum, part) => sum + part.byteLength, 0)).toBe(sharedBytes);
    expect(await text(two)).toBe(JSON.stringify(childBody(prefix, 2)));
  });

  it("leaves a body that is not plain data (a toJSON, a class instance) to JSON.stringify", () => {
    const prefix = sealSharedPrefix(fixturePrefix("4k"));
    const body = childBody(prefix, 1);
    expect(serialiseSealedBody({ ...body, when: new Date(0) })).toBeUndefined();
    expect(serialiseSealedBody({ ...body, metadata: { toJSON: () => "x" } })).toBeUndefined();
  });

  it("hooks a method the SDK still has: the client replaces Anthropic's buildBody to splice bodies", () => {
    // Without it the client still sends the right bytes, only serialised per child: this test is
    // what notices an SDK upgrade that renamed it.
    expect(typeof (Anthropic.prototype as unknown as { buildBody?: unknown }).buildBody).toBe("function");
  });

  it("hooks OpenAI's buildBody too", () => {
    expect(typeof (OpenAI.prototype as unknown as { buildBody?: unknown }).buildBody).toBe("function");
  });
});

describe("bodyChunks", () => {
  const bytes = (length: number, fill: number) => new Uint8Array(length).fill(fill);
  const joined = (parts: readonly Uint8Array[]) => Buffer.concat(parts);
  const bodyOf = (...parts: Uint8Array[]): SerialisedBody => ({
    parts,
    byteLength: parts.reduce((sum, part) => sum + part.byteLength, 0),
  });

  it("sends a child of a 4k parent in one chunk: one write after the request's headers, not nine", () => {
    const body = serialiseSealedBody(childBody(sealSharedPrefix(fixturePrefix("4k")), 1))!;
    expect(body.parts.length).toBeGreaterThan(5);
    const chunks = bodyChunks(body);
    expect(chunks).toHaveLength(1);
    expect(Buffer.compare(chunks[0]!, joined(body.parts))).toBe(0);
  });

  it("is what the stream hands fetch: a 4k child in one chunk", async () => {
    const body = serialiseSealedBody(childBody(sealSharedPrefix(fixturePrefix("4k")), 1))!;
    const read: Uint8Array[] = [];
    for await (const chunk of serialisedBodyStream(body)) read.push(chunk);
    expect(read).toHaveLength(1);
    expect(Buffer.compare(read[0]!, joined(body.parts))).toBe(0);
  });

  it("hands fetch a 4k child as its one buffer, and a 48k child as a stream of its parts", () => {
    const small = serialiseSealedBody(childBody(sealSharedPrefix(fixturePrefix("4k")), 1))!;
    const smallBody = fetchBody(small);
    expect(smallBody).toBeInstanceOf(Uint8Array);
    expect(Buffer.compare(smallBody as Uint8Array, joined(small.parts))).toBe(0);
    const large = serialiseSealedBody(childBody(sealSharedPrefix(fixturePrefix("48k")), 1))!;
    expect(fetchBody(large)).toBeInstanceOf(ReadableStream);
  });

  it("sends a child of a 48k parent in its parts, the cached buffers themselves, never a copy", async () => {
    const prefix = sealSharedPrefix(fixturePrefix("48k"));
    const body = serialiseSealedBody(childBody(prefix, 1))!;
    expect(body.byteLength).toBeGreaterThan(SINGLE_CHUNK_MAX_BYTES);
    const read: Uint8Array[] = [];
    for await (const chunk of serialisedBodyStream(body)) read.push(chunk);
    expect(read).toHaveLength(body.parts.length);
    for (const [i, chunk] of read.entries()) expect(chunk).toBe(body.parts[i]);
  });

  it("copies a body of exactly the limit into one chunk, and leaves one byte more in its parts", () => {
    const head = bytes(10, 1);
    const fits = bodyOf(head, bytes(SINGLE_CHUNK_MAX_BYTES - 10, 2));
    const together = bodyChunks(fits);
    expect(together).toHaveLength(1);
    expect(Buffer.compare(together[0]!, joined(fits.parts))).toBe(0);

    const over = bodyOf(head, bytes(SINGLE_CHUNK_MAX_BYTES - 9, 3));
    expect(bodyChunks(over)).toBe(over.parts);
    // One part is already one write: it goes as it is.
    const single = bodyOf(bytes(100, 4));
    expect(bodyChunks(single)).toBe(single.parts);
  });
});
