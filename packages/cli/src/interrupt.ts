// Ctrl-C and SIGTERM as an AbortSignal: the first one asks the command to stop and clean up, a second
// one ends the process at once (exit 130). Handlers are installed only by commands that ask for them.
import { ForkdError } from "@forkd/protocol";

/** The interruption of one command. */
export class Interruption implements Disposable {
  readonly #controller = new AbortController();
  readonly #onSignal: (signal: NodeJS.Signals) => void;
  readonly #onSecond: () => void;
  #installed = false;

  /** @param onSecondSignal called before the process exits on a second signal (a last cleanup). */
  constructor(onSecondSignal: () => void = () => {}) {
    this.#onSecond = onSecondSignal;
    this.#onSignal = (signal) => {
      if (this.#controller.signal.aborted) {
        this.#onSecond();
        process.exit(130);
      }
      this.#controller.abort(new InterruptedError(signal));
    };
  }

  /** Aborted on the first SIGINT or SIGTERM; the handlers are installed on first access. */
  get signal(): AbortSignal {
    if (!this.#installed) {
      this.#installed = true;
      process.on("SIGINT", this.#onSignal);
      process.on("SIGTERM", this.#onSignal);
    }
    return this.#controller.signal;
  }

  /** Whether a signal arrived. */
  get interrupted(): boolean {
    return this.#controller.signal.aborted;
  }

  [Symbol.dispose](): void {
    process.off("SIGINT", this.#onSignal);
    process.off("SIGTERM", this.#onSignal);
  }
}

/** The abort reason of an {@link Interruption}. */
export class InterruptedError extends ForkdError<"interrupted"> {
  override readonly name = "InterruptedError";
  readonly code = "interrupted" as const;
  readonly retryable = false;
  readonly signal: NodeJS.Signals;
  constructor(signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
    this.signal = signal;
  }
}

/** Resolves when `signal` aborts (at once if it already has). */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}
