// Rebuilds the message a streamed Messages API reply carried, from the server-sent events as they
// pass through the proxy: the same `{ role, content, stop_reason, usage, … }` the API returns to a
// request without `stream`. The proxy forwards the bytes untouched; this reads a copy.
import { parseJsonText } from "@forkd/protocol/internal";
import { StreamAssemblyError } from "./errors.js";
import { SseAssembler } from "./sse.js";

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
export class MessageAssembler extends SseAssembler<AssembledMessage> {
  #message: AssembledMessage | undefined;
  #open = new Map<number, OpenBlock>();

  /** The finished reply, once the stream's `message_stop` has been read. */
  get message(): AssembledMessage | undefined {
    return this.reply;
  }

  protected onData(data: string): AssembledMessage | undefined {
    const event = parseJsonText(data) as Record<string, unknown> & { type?: string };
    switch (event.type) {
      case "message_start": {
        const message = event.message as AssembledMessage | undefined;
        if (message === undefined || !Array.isArray(message.content)) {
          throw new StreamAssemblyError("message_start without a message");
        }
        this.#message = { ...message, content: [...message.content] };
        return undefined;
      }
      case "content_block_start": {
        const message = this.#started(event.type);
        const block = { ...(event.content_block as AssembledBlock) };
        message.content[Number(event.index)] = block;
        this.#open.set(Number(event.index), { block, partialJson: "", sawJson: false });
        return undefined;
      }
      case "content_block_delta":
        this.#onDelta(this.#openBlock(event.index), event.delta as Record<string, unknown>);
        return undefined;
      case "content_block_stop": {
        const open = this.#openBlock(event.index);
        if (open.sawJson) open.block.input = open.partialJson === "" ? {} : parseJsonText(open.partialJson);
        this.#open.delete(Number(event.index));
        return undefined;
      }
      case "message_delta": {
        const message = this.#started(event.type);
        Object.assign(message, event.delta as object);
        if (event.usage !== undefined) {
          message.usage = { ...(message.usage as object | undefined), ...(event.usage as object) };
        }
        return undefined;
      }
      case "message_stop":
        return this.#started(event.type);
      case "error":
        throw new StreamAssemblyError(`the stream carried an error: ${data.slice(0, 500)}`);
      default:
        // ping, and event types newer than this code: they change nothing in the message.
        return undefined;
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
