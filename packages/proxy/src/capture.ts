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
 * The file's text: `JSON.stringify(file, null, 2)`, but with the request as the agent sent it, byte
 * for byte, when its text is known. An agent in another language may send values a JavaScript reading
 * writes differently (`1.0`); `forkd fork --from` reads them from here.
 */
function captureFileText(members: [string, unknown][], requestText: string | undefined): string {
  const lines = members.map(([key, value]) => {
    const text =
      key === "request" && requestText !== undefined
        ? requestText
        : // Newlines in JSON.stringify's output are its own indentation: strings escape theirs.
          JSON.stringify(value, null, 2).replaceAll("\n", "\n  ");
    return `  ${JSON.stringify(key)}: ${text}`;
  });
  return `{\n${lines.join(",\n")}\n}\n`;
}

/**
 * Returns an `onTurn` callback that writes each turn under `dir` (files mode 0600: they hold the
 * conversation) and reports the path written.
 */
export function turnCapture(dir: string, written?: (path: string, turn: ProxyTurn) => void) {
  return async (turn: ProxyTurn, requestText?: string): Promise<void> => {
    const path = captureFileOf(dir, turn);
    await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
    const { api, path: requestPath, request, response, betas } = turn;
    // An Anthropic turn keeps the fixtures' parent-turn format; another API's turn says which API it
    // is, and its path (a Gemini call's names the model).
    const members: [string, unknown][] =
      api === "anthropic"
        ? [
            ["request", request],
            ["response", response],
            ["betas", betas],
          ]
        : [
            ["api", api],
            ["path", requestPath],
            ["request", request],
            ["response", response],
          ];
    await writeFile(path, captureFileText(members, requestText), { mode: 0o600 });
    written?.(path, turn);
  };
}
