// Output caps: every tool result is bounded, so one call cannot flood the model's context, and the
// model is told how much was cut and how to see the rest.

/** Cuts `text` to its first `capBytes` UTF-8 bytes and appends a marker saying how much was cut. */
export function capOutput(text: string, capBytes: number, hint?: string): string {
  const total = Buffer.byteLength(text, "utf8");
  if (total <= capBytes) return text;
  const head = utf8Prefix(Buffer.from(text, "utf8"), capBytes);
  return `${head.toString("utf8")}\n${truncationMarker(total - head.length, total, hint)}`;
}

/** The line that marks a cut: `[output truncated: 1,234 of 5,678 bytes cut; <hint>]`. */
export function truncationMarker(cutBytes: number, totalBytes: number, hint?: string): string {
  const tail = hint === undefined ? "" : `; ${hint}`;
  return `[output truncated: ${cutBytes.toLocaleString("en-US")} of ${totalBytes.toLocaleString("en-US")} bytes cut${tail}]`;
}

/** The longest prefix of `buf` of at most `max` bytes that does not split a UTF-8 character. */
export function utf8Prefix(buf: Buffer, max: number): Buffer {
  if (buf.length <= max) return buf;
  let end = Math.max(0, max);
  while (end > 0 && isContinuation(buf[end]!)) end--;
  return buf.subarray(0, end);
}

/** The longest suffix of `buf` of at most `max` bytes that does not start inside a UTF-8 character. */
export function utf8Suffix(buf: Buffer, max: number): Buffer {
  if (buf.length <= max) return buf;
  let start = buf.length - Math.max(0, max);
  while (start < buf.length && isContinuation(buf[start]!)) start++;
  return buf.subarray(start);
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/**
 * Collects a stream's bytes in bounded memory: the first half of the cap and the last half are kept,
 * the middle is counted and replaced by a marker (a command's end usually says whether it worked).
 */
export class HeadTailBuffer {
  readonly #headCap: number;
  readonly #tailCap: number;
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  #tail: Buffer[] = [];
  #tailBytes = 0;
  #total = 0;

  /** @param capBytes bytes kept in all. @unit bytes */
  constructor(capBytes: number) {
    this.#headCap = Math.floor(capBytes / 2);
    this.#tailCap = capBytes - this.#headCap;
  }

  /** Bytes pushed so far. @unit bytes */
  get totalBytes(): number {
    return this.#total;
  }

  /**
   * Bytes held in memory: the head and the tail chunks kept. At most the cap plus one chunk, however
   * long the stream; this is what bounds a tool's memory. @unit bytes
   */
  get retainedBytes(): number {
    let bytes = 0;
    for (const chunk of [...this.#head, ...this.#tail]) bytes += chunk.length;
    return bytes;
  }

  push(chunk: Buffer): void {
    this.#total += chunk.length;
    let rest = chunk;
    if (this.#headBytes < this.#headCap) {
      const take = rest.subarray(0, this.#headCap - this.#headBytes);
      this.#head.push(take);
      this.#headBytes += take.length;
      rest = rest.subarray(take.length);
    }
    if (rest.length === 0) return;
    this.#tail.push(rest);
    this.#tailBytes += rest.length;
    // Drop whole chunks that lie entirely before the last #tailCap bytes.
    while (this.#tail.length > 1 && this.#tailBytes - this.#tail[0]!.length >= this.#tailCap) {
      this.#tailBytes -= this.#tail.shift()!.length;
    }
  }

  /** The kept bytes as text, with a marker where the middle was cut (at line ends where there are any). */
  toString(hint?: string): string {
    const head = Buffer.concat(this.#head);
    const tailAll = Buffer.concat(this.#tail);
    if (this.#total <= this.#headCap + this.#tailCap) {
      return Buffer.concat([head, tailAll]).toString("utf8");
    }
    const lastNewline = head.lastIndexOf(0x0a);
    // The head was cut at a byte count: end it at a line end, or at least not inside a character.
    const cleanHead = head.subarray(0, lastNewline === -1 ? lastCharBoundary(head) : lastNewline + 1);
    let tail = utf8Suffix(tailAll, this.#tailCap);
    const firstNewline = tail.indexOf(0x0a);
    if (firstNewline !== -1 && firstNewline < tail.length - 1) tail = tail.subarray(firstNewline + 1);
    const cut = this.#total - cleanHead.length - tail.length;
    const headText = cleanHead.toString("utf8");
    const separator = headText === "" || headText.endsWith("\n") ? "" : "\n";
    return `${headText}${separator}${truncationMarker(cut, this.#total, hint)}\n${tail.toString("utf8")}`;
  }
}

/** The end of the last complete UTF-8 character in `buf`. */
function lastCharBoundary(buf: Buffer): number {
  let i = buf.length - 1;
  while (i >= 0 && isContinuation(buf[i]!)) i--;
  if (i < 0) return 0;
  const lead = buf[i]!;
  const width = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return i + width <= buf.length ? i + width : i;
}
