// What the demo starts, undone in reverse order whatever happens: daemons before the NATS server they
// talk to, the server before its temp dir. Temp dirs are also removed by a synchronous 'exit' hook,
// for a second Ctrl-C that ends the process before the stack unwinds.
import { rmSync } from "node:fs";

/** Things to stop, last started first. */
export class CleanupStack implements AsyncDisposable {
  readonly #steps: { what: string; undo: () => Promise<unknown> | unknown }[] = [];
  readonly #tempDirs = new Set<string>();
  readonly #onFailure: (what: string, error: unknown) => void;
  readonly #removeTempDirsNow = () => {
    for (const dir of this.#tempDirs) rmSync(dir, { recursive: true, force: true });
  };

  /** @param onFailure told about a step that failed (the others still run). */
  constructor(onFailure: (what: string, error: unknown) => void = () => {}) {
    this.#onFailure = onFailure;
    process.once("exit", this.#removeTempDirsNow);
  }

  /** Registers `undo`, to run before everything registered earlier. */
  defer(what: string, undo: () => Promise<unknown> | unknown): void {
    this.#steps.push({ what, undo });
  }

  /** Registers a temp dir to remove (also at process exit). */
  tempDir(dir: string): void {
    this.#tempDirs.add(dir);
  }

  /** Runs every step, newest first; a failing step does not stop the others. */
  async [Symbol.asyncDispose](): Promise<void> {
    for (const { what, undo } of this.#steps.splice(0).reverse()) {
      try {
        await undo();
      } catch (error) {
        this.#onFailure(what, error);
      }
    }
    this.#removeTempDirsNow();
    this.#tempDirs.clear();
    process.off("exit", this.#removeTempDirsNow);
  }
}
