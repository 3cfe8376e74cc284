// Serialises a Messages API body to exactly the bytes `JSON.stringify` would give, reusing the bytes
// of the values that belong to a sealed shared prefix (`sealSharedPrefix`). Siblings of one parent
// send the same ~190 kB of prefix: serialised once per parent, each child's body is those bytes (the
// very buffers, not a copy) plus its own few hundred bytes. A sealed value is deeply frozen, so bytes
// cached by its identity cannot go stale. The one difference from `JSON.stringify`: an element the
// parent sent in a form JavaScript does not write (`1.0`, in a Python parent's tool schema) is sent in
// the parent's text, tied to it when the prefix was sealed, so that the child's prompt is the parent's.
import { isSealedValue, stringifyWithVerbatim } from "@forkd/core/internal";

// How deep the writer walks before it hands a value to JSON.stringify: body → messages → message →
// content → block. Sealed values sit at these levels (the parent's messages, tools and system, the
// reply's content); below them nothing is shared that is not already inside a sealed value.
const WALK_DEPTH = 4;

// Bytes of one sealed value, and of runs of consecutive sealed array elements (the parent's
// messages, which every child's request starts with), keyed by the value or the run's first element.
const sealedBytes = new WeakMap<object, Uint8Array>();
interface SealedRun {
  members: readonly object[];
  bytes: Uint8Array;
}
const sealedRuns = new WeakMap<object, SealedRun[]>();
/** Runs remembered per first element: a later turn may cut the parent's messages differently. */
const RUNS_PER_START = 4;

/** Thrown inside the writer when the body is not plain JSON data: the caller falls back to JSON.stringify. */
class NotPlainData extends Error {}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function hasToJson(value: object): boolean {
  return typeof (value as { toJSON?: unknown }).toJSON === "function";
}

const utf8 = new TextEncoder();

/** Collects a body as strings and shared bytes, merging adjacent strings. */
class BodyParts {
  readonly parts: (string | Uint8Array)[] = [];
  #text = "";

  text(chunk: string): void {
    this.#text += chunk;
  }

  shared(bytes: Uint8Array): void {
    if (this.#text !== "") this.parts.push(this.#text);
    this.#text = "";
    this.parts.push(bytes);
  }

  finish(): (string | Uint8Array)[] {
    if (this.#text !== "") this.parts.push(this.#text);
    this.#text = "";
    return this.parts;
  }
}

// A sealed value's text: JSON.stringify's, but for the elements the parent sent in a form JavaScript
// does not write (`1.0`, for one), which keep the parent's exact text (core's verbatim-elements.ts).
function sealedText(value: object): string {
  return stringifyWithVerbatim(value) as string;
}

function bytesOfSealed(value: object): Uint8Array {
  let bytes = sealedBytes.get(value);
  if (bytes === undefined) {
    if (hasToJson(value)) throw new NotPlainData();
    bytes = utf8.encode(sealedText(value));
    sealedBytes.set(value, bytes);
  }
  return bytes;
}

function bytesOfRun(members: readonly object[]): Uint8Array {
  const first = members[0]!;
  const known = sealedRuns.get(first) ?? [];
  const hit = known.find(
    (run) => run.members.length === members.length && run.members.every((m, i) => m === members[i]),
  );
  if (hit !== undefined) return hit.bytes;
  for (const member of members) if (hasToJson(member)) throw new NotPlainData();
  const bytes = utf8.encode(members.map(sealedText).join(","));
  sealedRuns.set(first, [{ members: [...members], bytes }, ...known].slice(0, RUNS_PER_START));
  return bytes;
}

// JSON.stringify of a value that is neither undefined, a function nor a symbol.
function writeValue(out: BodyParts, value: unknown, depth: number): void {
  if (typeof value === "object" && value !== null) {
    if (isSealedValue(value)) {
      out.shared(bytesOfSealed(value));
      return;
    }
    if (depth > 0) {
      if (hasToJson(value)) throw new NotPlainData();
      if (Array.isArray(value)) {
        writeArray(out, value, depth - 1);
        return;
      }
      if (isPlainObject(value)) {
        writeObject(out, value as Record<string, unknown>, depth - 1);
        return;
      }
      throw new NotPlainData();
    }
  }
  const text = JSON.stringify(value);
  if (text === undefined) throw new NotPlainData();
  out.text(text);
}

function omitted(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

function writeObject(out: BodyParts, object: Record<string, unknown>, depth: number): void {
  out.text("{");
  let first = true;
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (omitted(value)) continue;
    out.text(`${first ? "" : ","}${JSON.stringify(key)}:`);
    first = false;
    writeValue(out, value, depth);
  }
  out.text("}");
}

function writeArray(out: BodyParts, array: readonly unknown[], depth: number): void {
  out.text("[");
  for (let i = 0; i < array.length; ) {
    if (i > 0) out.text(",");
    let end = i;
    while (end < array.length && isSealedValue(array[end])) end++;
    if (end - i >= 2) {
      out.shared(bytesOfRun(array.slice(i, end) as object[]));
      i = end;
      continue;
    }
    const value = array[i];
    if (omitted(value)) out.text("null");
    else writeValue(out, value, depth);
    i++;
  }
  out.text("]");
}

// Whether any value the writer reaches is sealed: without one there is nothing to reuse.
function reachesSealed(value: unknown, depth: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (isSealedValue(value)) return true;
  if (depth === 0) return false;
  const members = Array.isArray(value) ? value : Object.values(value);
  return members.some((member) => reachesSealed(member, depth - 1));
}

/**
 * A request body in parts: the shared ones are the cached bytes of sealed values, the same buffers
 * for every child that sends them (never written to, never transferred).
 */
export interface SerialisedBody {
  readonly parts: readonly Uint8Array[];
  /** The sum of the parts' lengths: the request's `content-length`. @unit bytes */
  readonly byteLength: number;
}

/**
 * The bytes of `JSON.stringify(body)`, in parts whose shared ones are the cached bytes of the sealed
 * values it holds (serialised once, whichever child sends them). `undefined` when the body holds no
 * sealed value, or is not plain JSON data (a `toJSON`, a class instance) at the levels the writer
 * walks: the caller then serialises it as usual.
 */
export function serialiseSealedBody(body: Record<string, unknown>): SerialisedBody | undefined {
  if (!reachesSealed(body, WALK_DEPTH)) return undefined;
  const out = new BodyParts();
  try {
    writeValue(out, body, WALK_DEPTH);
  } catch (error) {
    if (error instanceof NotPlainData) return undefined;
    throw error;
  }
  const parts = out.finish().map((part) => (typeof part === "string" ? utf8.encode(part) : part));
  return { parts, byteLength: parts.reduce((sum, part) => sum + part.byteLength, 0) };
}

/**
 * A body up to this size is sent as one chunk, its parts copied together: fetch writes each chunk of a
 * stream body with a system call of its own, after the one of the request's headers, so the nine parts
 * of a child's body were nine writes, where one buffer is one. A larger body (a 48k parent's) goes
 * in its parts, the shared ones never copied: a copy per child, even a transient one, shows in the
 * daemon's memory with 100 children in flight (bench #8). @unit bytes
 */
export const SINGLE_CHUNK_MAX_BYTES = 64 * 1024;

/**
 * The chunks `body` is sent in: one buffer, its parts copied together, when it is at most
 * {@link SINGLE_CHUNK_MAX_BYTES} long (a child of a 4k parent); otherwise its parts as they are (the
 * same buffers, never copied).
 */
export function bodyChunks(body: SerialisedBody): readonly Uint8Array[] {
  if (body.parts.length <= 1 || body.byteLength > SINGLE_CHUNK_MAX_BYTES) return body.parts;
  return [Buffer.concat(body.parts, body.byteLength)];
}

/**
 * What fetch is given to send `body`: its one chunk as that buffer (a child of a 4k parent), which fetch
 * writes straight after the request's headers, or else {@link serialisedBodyStream}. A stream is read
 * chunk by chunk through promises: a 4k child's body followed its headers by 0.125 ms that way, against
 * 0.035 ms as a buffer (scratch timeline of sequential 4k forks, 2026-11-27).
 */
export function fetchBody(body: SerialisedBody): Uint8Array | ReadableStream<Uint8Array> {
  const chunks = bodyChunks(body);
  return chunks.length === 1 ? chunks[0]! : serialisedBodyStream(body);
}

/**
 * A stream of `body`'s bytes in {@link bodyChunks}, for fetch to write one after the other (sent with
 * its `content-length`, not chunked). A Blob would be read into new buffers, one full copy of the body
 * per child while its request is written (~170 kB at 48k: bench #8's finding); a default (non-byte)
 * stream hands its chunks to the socket untouched, so the shared parts are never copied.
 */
export function serialisedBodyStream(body: SerialisedBody): ReadableStream<Uint8Array> {
  const chunks = bodyChunks(body);
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

type BuildBody = (args: { options: { body?: unknown; headers?: unknown } }) => {
  bodyHeaders: unknown;
  body: unknown;
};

/**
 * Has an SDK client (Anthropic's or OpenAI's: both build a request's body in a `buildBody` method)
 * write a body that holds a sealed shared prefix with that prefix's cached bytes, and the parent's
 * own text for the values tied to one. The hook sits where the SDK turns its final body object (after
 * its own changes: `betas` moved to a header, `"stream": true` added) into bytes, so what it
 * serialises is exactly what the SDK would have; any other body, or an SDK without this method, is
 * serialised by the SDK. The body is never re-sent by the SDK: forkd's clients retry themselves.
 */
export function spliceSealedBodies(sdk: object): void {
  const target = sdk as { buildBody?: BuildBody };
  const original = target.buildBody;
  if (typeof original !== "function") return;
  target.buildBody = function (this: unknown, args) {
    const body = args.options.body;
    const plain =
      typeof body === "object" && body !== null && Object.getPrototypeOf(body) === Object.prototype;
    const spliced = plain ? serialiseSealedBody(body as Record<string, unknown>) : undefined;
    if (spliced === undefined) return original.call(this, args);
    // The length is known, so the request is not chunked (a stream body goes with duplex "half").
    return {
      bodyHeaders: { "content-type": "application/json", "content-length": String(spliced.byteLength) },
      body: fetchBody(spliced),
      isStreamingBody: false,
    };
  };
}
