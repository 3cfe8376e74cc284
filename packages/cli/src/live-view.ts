// A block of lines redrawn in place on a terminal (ANSI cursor movement), at most ~10 times a second,
// each line cut to the terminal's width so that nothing wraps and the block's height stays known.
import { truncateVisible } from "./format.js";
import type { OutputStream } from "./io.js";

const HIDE_CURSOR = "\x1b[?25l";
const SHOW_CURSOR = "\x1b[?25h";
const CLEAR_LINE = "\x1b[2K";
const CLEAR_BELOW = "\x1b[J";

/** Options of {@link LiveView}. */
export interface LiveViewOptions {
  /** Shortest time between two redraws. @default 100 @unit ms */
  intervalMs?: number;
}

/** Lines redrawn in place. Call {@link update} as often as you like; {@link close} when done. */
export class LiveView {
  readonly #stream: OutputStream;
  readonly #intervalMs: number;
  #render: () => string[] = () => [];
  #drawnLines = 0;
  #lastDrawAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #restoreCursor = () => this.#stream.write(SHOW_CURSOR);

  constructor(stream: OutputStream, options: LiveViewOptions = {}) {
    this.#stream = stream;
    this.#intervalMs = options.intervalMs ?? 100;
    stream.write(HIDE_CURSOR);
    // A process that exits in the middle (second Ctrl-C) must not leave the cursor hidden.
    process.once("exit", this.#restoreCursor);
  }

  /** Sets what to draw (a function, called at draw time) and schedules a redraw. */
  update(render?: () => string[]): void {
    if (render !== undefined) this.#render = render;
    if (this.#closed || this.#timer !== undefined) return;
    const wait = this.#lastDrawAt + this.#intervalMs - Date.now();
    if (wait <= 0) {
      this.#draw();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#draw();
    }, wait);
  }

  /** Draws one last time and shows the cursor again; the block stays on the screen. */
  close(): void {
    if (this.#closed) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#draw();
    this.#closed = true;
    this.#stream.write(SHOW_CURSOR);
    process.off("exit", this.#restoreCursor);
  }

  #draw(): void {
    this.#lastDrawAt = Date.now();
    const width = Math.max(20, (this.#stream.columns ?? 100) - 1);
    const height = Math.max(3, (this.#stream.rows ?? 40) - 1);
    let lines = this.#render();
    if (lines.length > height) {
      const hidden = lines.length - (height - 1);
      lines = [...lines.slice(0, height - 1), `… ${hidden} more`];
    }
    let out = this.#drawnLines > 0 ? `\x1b[${this.#drawnLines}A\r` : "\r";
    for (const line of lines) out += `${CLEAR_LINE}${truncateVisible(line, width)}\n`;
    out += CLEAR_BELOW;
    this.#stream.write(out);
    this.#drawnLines = lines.length;
  }
}
