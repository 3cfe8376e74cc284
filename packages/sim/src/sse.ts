/**
 * Server-sent events in Anthropic's order: `message_start` (with the input usage), `ping`, then
 * for each content block `content_block_start`, its deltas (`text_delta`, `thinking_delta` +
 * `signature_delta`, `input_json_delta`) and `content_block_stop`, then `message_delta` (stop
 * reason and final usage) and `message_stop`. Frames carry the output tokens they deliver so the
 * writer can pace them and cut a stream after an exact number of tokens.
 */
import { CHARS_PER_TOKEN, countTextTokens } from "./tokenizer.js";
import type { MessageResponse } from "./types.js";

/** One or more SSE events written together. */
export interface Frame {
  data: string;
  /** Output tokens the frame delivers. @unit tokens */
  tokens: number;
  /** `message_delta`: the end of the answer. */
  final?: boolean;
}

/** One SSE event, serialised. */
export function sseEvent(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Options of {@link messageFrames}. */
export interface FrameOptions {
  /** Most tokens per delta. @unit tokens */
  chunkTokens: number;
  /** Token counts at which a frame must end (e.g. where a fault cuts the stream). @unit tokens */
  boundaries?: readonly number[];
}

/** Splits a message into SSE frames. */
export function messageFrames(message: MessageResponse, options: FrameOptions): Frame[] {
  const chunk = Math.max(1, Math.floor(options.chunkTokens));
  const boundaries = [...(options.boundaries ?? [])].sort((a, b) => a - b);
  const { content, usage, ...head } = message;
  const frames: Frame[] = [];
  frames.push({
    data:
      sseEvent("message_start", {
        type: "message_start",
        message: {
          ...head,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: Math.min(1, usage.output_tokens) },
        },
      }) + sseEvent("ping", { type: "ping" }),
    tokens: 0,
  });
  let sent = 0;
  const deltas = (index: number, text: string, make: (piece: string) => unknown, most = chunk): void => {
    let pos = 0;
    while (pos < text.length) {
      let take = most;
      const next = boundaries.find((b) => b > sent);
      if (next !== undefined && next - sent < take) take = next - sent;
      const piece = text.slice(pos, pos + take * CHARS_PER_TOKEN);
      pos += piece.length;
      const tokens = countTextTokens(piece);
      sent += tokens;
      frames.push({
        data: sseEvent("content_block_delta", { type: "content_block_delta", index, delta: make(piece) }),
        tokens,
      });
    }
  };
  content.forEach((block, index) => {
    switch (block.type) {
      case "text":
        frames.push({
          data: sseEvent("content_block_start", {
            type: "content_block_start",
            index,
            content_block: { type: "text", text: "" },
          }),
          tokens: 0,
        });
        deltas(index, block.text, (text) => ({ type: "text_delta", text }));
        break;
      case "thinking":
        frames.push({
          data: sseEvent("content_block_start", {
            type: "content_block_start",
            index,
            content_block: { type: "thinking", thinking: "", signature: "" },
          }),
          tokens: 0,
        });
        deltas(index, block.thinking, (thinking) => ({ type: "thinking_delta", thinking }));
        frames.push({
          data: sseEvent("content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "signature_delta", signature: block.signature },
          }),
          tokens: 0,
        });
        break;
      case "tool_use": {
        const json = JSON.stringify(block.input);
        const nameTokens = countTextTokens(block.name + json) - countTextTokens(json);
        sent += nameTokens;
        frames.push({
          data: sseEvent("content_block_start", {
            type: "content_block_start",
            index,
            content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
          }),
          tokens: nameTokens,
        });
        // Tool input streams in small pieces, as the API does.
        deltas(
          index,
          json,
          (partial_json) => ({ type: "input_json_delta", partial_json }),
          Math.min(chunk, 4),
        );
        break;
      }
    }
    frames.push({ data: sseEvent("content_block_stop", { type: "content_block_stop", index }), tokens: 0 });
  });
  frames.push({
    data: sseEvent("message_delta", {
      type: "message_delta",
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
      },
    }),
    tokens: 0,
    final: true,
  });
  frames.push({ data: sseEvent("message_stop", { type: "message_stop" }), tokens: 0 });
  return frames;
}
