// Rebuilds the model content a Gemini `generateContent` reply carried, in the shape the API takes it
// back in the next request's `contents`: `{ role: "model", parts }`. A streamed reply (`alt=sse`, or
// `streamGenerateContent`'s JSON array) comes in chunks, each a response with a piece of candidate 0's
// content; their parts are appended in order, adjacent plain text pieces joined, as the Gemini CLI
// joins them in its own history.
import type { GeminiContent, GeminiPart } from "@forkd/core";
import { parseJsonText } from "@forkd/protocol/internal";
import { StreamAssemblyError } from "./errors.js";
import { SseAssembler } from "./sse.js";

/** A Gemini model content as the API accepts it back. */
export type GeminiReply = GeminiContent & { role: "model" };

/** One `GenerateContentResponse` (a whole reply, or one chunk of a stream). */
interface GeminiResponse {
  error?: unknown;
  candidates?: { index?: number; content?: { role?: string; parts?: GeminiPart[] }; finishReason?: string }[];
}

/** Folds the chunks of one reply into candidate 0's content. */
class GeminiReplyBuilder {
  readonly #parts: GeminiPart[] = [];
  /** The first chunk's content, whose fields (and their order) the reply keeps. */
  #content: Record<string, unknown> | undefined;
  #finished = false;

  /** Whether a chunk carried candidate 0's `finishReason`: the reply is whole. */
  get finished(): boolean {
    return this.#finished;
  }

  add(response: GeminiResponse): void {
    if (response.error !== undefined)
      throw new StreamAssemblyError(
        `the stream carried an error: ${JSON.stringify(response.error).slice(0, 500)}`,
      );
    const candidate = response.candidates?.find((c) => (c.index ?? 0) === 0);
    if (candidate === undefined) return;
    if (candidate.content !== undefined) this.#content ??= candidate.content;
    for (const part of candidate.content?.parts ?? []) {
      const last = this.#parts[this.#parts.length - 1];
      // A later piece with a signature of its own stays a part: joined, its signature would be lost.
      if (last !== undefined && isPlainText(last) && isPlainText(part) && part.thoughtSignature === undefined)
        this.#parts[this.#parts.length - 1] = {
          ...last,
          text: `${last.text as string}${part.text as string}`,
        };
      else this.#parts.push({ ...part });
    }
    if (candidate.finishReason !== undefined) this.#finished = true;
  }

  /** Candidate 0's content: the first chunk's fields in its order (`{parts, role}` from the API), all parts. */
  reply(): GeminiReply {
    return { ...this.#content, parts: this.#parts, role: "model" };
  }
}

/** A text part that is only text: not a thought, not a call nor data. */
function isPlainText(part: GeminiPart): boolean {
  return (
    typeof part.text === "string" &&
    part.thought !== true &&
    part.functionCall === undefined &&
    part.functionResponse === undefined &&
    part.inlineData === undefined &&
    part.fileData === undefined
  );
}

/**
 * Parses a Gemini event stream (`alt=sse`) incrementally. The reply is complete at the chunk that
 * carries candidate 0's `finishReason`; a stream that ends without one was cut short and yields none.
 */
export class GeminiAssembler extends SseAssembler<GeminiReply> {
  readonly #builder = new GeminiReplyBuilder();

  protected onData(data: string): GeminiReply | undefined {
    this.#builder.add(parseJsonText(data) as GeminiResponse);
    return this.#builder.finished ? this.#builder.reply() : undefined;
  }
}

/**
 * The reply of a non-SSE answer: `generateContent`'s response, or `streamGenerateContent`'s JSON
 * array of chunks; undefined when it holds no candidate content.
 */
export function geminiReplyOfJson(body: unknown): GeminiReply | undefined {
  const responses = (Array.isArray(body) ? body : [body]) as (GeminiResponse | null)[];
  const builder = new GeminiReplyBuilder();
  let seen = false;
  for (const response of responses) {
    if (response === null || typeof response !== "object") return undefined;
    if (response.candidates?.some((c) => (c.index ?? 0) === 0 && c.content !== undefined)) seen = true;
    builder.add(response);
  }
  return seen ? builder.reply() : undefined;
}
