// Rebuilds the message a streamed Messages API reply carried, from the server-sent events as they
// pass through the proxy: the same `{ role, content, stop_reason, usage, … }` the API returns to a
// request without `stream`. The proxy forwards the bytes untouched; this reads a copy.
import { parseJsonText } from "@forkd/protocol/internal";
import { StreamAssemblyError } from "./errors.js";

/** A content block of the reassembled reply: whatever fields the API gave it, completed by its deltas. */
export type AssembledBlock = Record<string, unknown> & { type: string };

/** The reply a stream carried, as the non-streaming API would have returned it. */
export interface AssembledMessage extends Record<string, unknown> {
  role: "assistant";
  content: AssembledBlock[];
}

interface OpenBlock {
  block: AssembledBlock;
  /** `input_json_delta` fragments of a tool call's input, parsed at the block's end. */
  partialJson: string;
  sawJson: boolean;
}

/**
 * Parses a Messages API event stream incrementally. Feed it the response body's text in chunks of
 * any size ({@link push}); {@link message} is set once `message_stop` has been seen.
 */
export class MessageAssembler {
  #buffer = "";
  #message: AssembledMessage | undefined;
  #open = new Map<number, OpenBlock>();
  #done: AssembledMessage | undefined;
  #error: StreamAssemblyError | undefined;

  /** The finished reply, once the stream's `message_stop` has been read. */
  get message(): AssembledMessage | undefined {
    return this.#done;
  }

  /** The first inconsistency seen (an event out of order, a bad JSON fragment); parsing stops there. */
  get error(): StreamAssemblyError | undefined {
    return this.#error;
  }

  /** Reads the next piece of the body. Returns true when this piece completed the message. */
  push(text: string): boolean {
    if (this.#error !== undefined || this.#done !== undefined) return false;
    this.#buffer += text;
    for (;;) {
      const end = eventEnd(this.#buffer);
      if (end === undefined) return false;
      const raw = this.#buffer.slice(0, end.index);
      this.#buffer = this.#buffer.slice(end.index + end.length);
      try {
        this.#onEvent(raw);
      } catch (error) {
        this.#error =
          error instanceof StreamAssemblyError
            ? error
            : new StreamAssemblyError(String(error), { cause: error });
        return false;
      }
      if (this.#done !== undefined) return true;
    }
  }

  #onEvent(raw: string): void {
    const data = dataOf(raw);
    if (data === undefined) return;
    const event = parseJsonText(data) as Record<string, unknown> & { type?: string };
    switch (event.type) {
      case "message_start": {
        const message = event.message as AssembledMessage | undefined;
        if (message === undefined || !Array.isArray(message.content)) {
          throw new StreamAssemblyError("message_start without a message");
        }
        this.#message = { ...message, content: [...message.content] };
        return;
      }
      case "content_block_start": {
        const message = this.#started(event.type);
        const block = { ...(event.content_block as AssembledBlock) };
        message.content[Number(event.index)] = block;
        this.#open.set(Number(event.index), { block, partialJson: "", sawJson: false });
        return;
      }
      case "content_block_delta":
        this.#onDelta(this.#openBlock(event.index), event.delta as Record<string, unknown>);
        return;
      case "content_block_stop": {
        const open = this.#openBlock(event.index);
        if (open.sawJson) open.block.input = open.partialJson === "" ? {} : parseJsonText(open.partialJson);
        this.#open.delete(Number(event.index));
        return;
      }
      case "message_delta": {
        const message = this.#started(event.type);
        Object.assign(message, event.delta as object);
        if (event.usage !== undefined) {
          message.usage = { ...(message.usage as object | undefined), ...(event.usage as object) };
        }
        return;
      }
      case "message_stop":
        this.#done = this.#started(event.type);
        return;
      case "error":
        throw new StreamAssemblyError(`the stream carried an error: ${data.slice(0, 500)}`);
      default:
        // ping, and event types newer than this code: they change nothing in the message.
        return;
    }
  }

  #onDelta(open: OpenBlock, delta: Record<string, unknown>): void {
    const block = open.block;
    switch (delta.type) {
      case "text_delta":
        block.text = `${(block.text as string | undefined) ?? ""}${delta.text as string}`;
        return;
      case "thinking_delta":
        block.thinking = `${(block.thinking as string | undefined) ?? ""}${delta.thinking as string}`;
        return;
      case "signature_delta":
        block.signature = delta.signature;
        return;
      case "input_json_delta":
        open.sawJson = true;
        open.partialJson += delta.partial_json as string;
        return;
      case "citations_delta":
        block.citations = [...((block.citations as unknown[] | undefined) ?? []), delta.citation];
        return;
      default:
        throw new StreamAssemblyError(`unknown delta type ${String(delta.type)}`);
    }
  }

  #started(type: string): AssembledMessage {
    if (this.#message === undefined) throw new StreamAssemblyError(`${type} before message_start`);
    return this.#message;
  }

  #openBlock(index: unknown): OpenBlock {
    this.#started("content_block event");
    const open = this.#open.get(Number(index));
    if (open === undefined) throw new StreamAssemblyError(`no open content block at index ${String(index)}`);
    return open;
  }
}

/** Where the first complete event of the buffer ends: a blank line, LF or CRLF. */
function eventEnd(buffer: string): { index: number; length: number } | undefined {
  const lf = buffer.indexOf("\n\n");
  const crlf = buffer.indexOf("\r\n\r\n");
  if (lf === -1 && crlf === -1) return undefined;
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { index: crlf, length: 4 };
  return { index: lf, length: 2 };
}

/** The `data:` lines of one event, joined as the SSE rules say; undefined for an event without data. */
function dataOf(raw: string): string | undefined {
  const lines = raw
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
  return lines.length === 0 ? undefined : lines.join("\n");
}
