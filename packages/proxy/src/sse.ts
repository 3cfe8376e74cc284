// The server-sent events every streamed API reply is made of: a reader that takes the body's text in
// chunks of any size and hands each complete event's data to the assembler of the API at hand.
import { StreamAssemblyError } from "./errors.js";

/** The state every reply assembler shows the proxy. */
export interface ReplyAssembler<Reply> {
  /** Reads the next piece of the body. Returns true when this piece completed the reply. */
  push(text: string): boolean;
  /** The reply, once the stream's last event has been read. */
  readonly reply: Reply | undefined;
  /** The first inconsistency seen (an event out of order, a bad JSON fragment); parsing stops there. */
  readonly error: StreamAssemblyError | undefined;
  /** The body ended: returns true when that completed the reply (an API whose last event is optional). */
  end(): boolean;
}

/**
 * An assembler over an SSE body: subclasses read one event's `data` at a time ({@link onData}) and
 * return the reply once the event that ends the stream has been read.
 */
export abstract class SseAssembler<Reply> implements ReplyAssembler<Reply> {
  #buffer = "";
  #done: Reply | undefined;
  #error: StreamAssemblyError | undefined;

  get reply(): Reply | undefined {
    return this.#done;
  }

  get error(): StreamAssemblyError | undefined {
    return this.#error;
  }

  push(text: string): boolean {
    if (this.#error !== undefined || this.#done !== undefined) return false;
    this.#buffer += text;
    for (;;) {
      const end = eventEnd(this.#buffer);
      if (end === undefined) return false;
      const raw = this.#buffer.slice(0, end.index);
      this.#buffer = this.#buffer.slice(end.index + end.length);
      const data = dataOf(raw);
      if (data === undefined) continue;
      try {
        this.#done = this.onData(data);
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

  end(): boolean {
    if (this.#error !== undefined || this.#done !== undefined) return false;
    this.#done = this.onEnd();
    return this.#done !== undefined;
  }

  /** Reads one event's data; returns the finished reply when this event ended the stream. */
  protected abstract onData(data: string): Reply | undefined;

  /** The reply when the body ends without the event that ends the stream; none by default. */
  protected onEnd(): Reply | undefined {
    return undefined;
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
