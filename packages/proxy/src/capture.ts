// `forkd capture`: each turn the proxy records, written as a parent-turn file that `forkd fork --from`
// reads: `{ request, response, betas }` for an Anthropic turn, `{ api, path, request, response }` for
// another API's. One folder per session, files numbered in order.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ProxyTurn } from "./turn-store.js";

/** Characters a session key may keep in a folder name. */
const UNSAFE = /[^A-Za-z0-9_.-]/g;

/** The file a turn is written to: `<dir>/<session>/<seq>.json`. */
export function captureFileOf(dir: string, turn: Pick<ProxyTurn, "session" | "seq">): string {
  return join(dir, turn.session.replace(UNSAFE, "_"), `${String(turn.seq).padStart(6, "0")}.json`);
}

/**
 * Returns an `onTurn` callback that writes each turn under `dir` (files mode 0600: they hold the
 * conversation) and reports the path written.
 */
export function turnCapture(dir: string, written?: (path: string, turn: ProxyTurn) => void) {
  return async (turn: ProxyTurn): Promise<void> => {
    const path = captureFileOf(dir, turn);
    await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
    const { api, path: requestPath, request, response, betas } = turn;
    // An Anthropic turn keeps the fixtures' parent-turn format; another API's turn says which API it
    // is, and its path (a Gemini call's names the model).
    const file =
      api === "anthropic" ? { request, response, betas } : { api, path: requestPath, request, response };
    await writeFile(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
    written?.(path, turn);
  };
}
