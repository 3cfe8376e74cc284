// The regex worker's entry: compiles one Grep call's pattern and answers each file's match request.
// A costly pattern over a large text takes seconds here, where it stalls no presence beat, no other
// run and no abort (off-thread-matcher.ts terminates this thread instead).
import { parentPort, workerData } from "node:worker_threads";
import { compilePattern, type MatchOperation, type PatternSpec, runMatch } from "./line-match.js";

/** A file's text to match. */
export interface MatchRequest {
  id: number;
  operation: MatchOperation;
  text: string;
}

/** The answer to a {@link MatchRequest}. */
export interface MatchReply {
  id: number;
  result: number | Uint32Array;
}

const compiled = compilePattern(workerData as PatternSpec);
// The main thread compiled it first and only starts a worker for a valid pattern.
if (!compiled.ok) throw new Error(compiled.reason);
const regex = compiled.value;

parentPort?.on("message", (request: MatchRequest) => {
  const result = runMatch(regex, request.operation, request.text);
  const reply: MatchReply = { id: request.id, result };
  parentPort?.postMessage(reply, typeof result === "number" ? [] : [result.buffer as ArrayBuffer]);
});
