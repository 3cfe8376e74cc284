// The regex worker's entry: matches batches of files' texts against a Grep call's pattern. A costly
// pattern over a large text takes seconds here, where it stalls no presence beat, no other run and
// no abort (off-thread-matcher.ts terminates this thread instead). Workers are kept between calls,
// so the matcher's code stays compiled by the JIT; the last pattern stays compiled too.
import { parentPort } from "node:worker_threads";
import type { RE2JS } from "re2js";
import { compilePattern, type MatchOperation, type PatternSpec, runMatch } from "./line-match.js";

/** Files' texts to match against one pattern. */
export interface MatchRequest {
  id: number;
  spec: PatternSpec;
  files: { operation: MatchOperation; text: string }[];
}

/** The answer to a {@link MatchRequest}: one result per file, in order. */
export interface MatchReply {
  id: number;
  results: (number | Uint32Array<ArrayBuffer>)[];
}

let last: { key: string; regex: RE2JS } | undefined;

function regexOf(spec: PatternSpec): RE2JS {
  const key = JSON.stringify([spec.pattern, spec.ignoreCase, spec.multiline]);
  if (last?.key !== key) {
    const compiled = compilePattern(spec);
    // The main thread compiled it first and sends only a valid pattern.
    if (!compiled.ok) throw new Error(compiled.reason);
    last = { key, regex: compiled.value };
  }
  return last.regex;
}

parentPort?.on("message", (request: MatchRequest) => {
  const regex = regexOf(request.spec);
  const results = request.files.map(({ operation, text }) => runMatch(regex, operation, text));
  const reply: MatchReply = { id: request.id, results };
  const moved = results.flatMap((result) => (typeof result === "number" ? [] : [result.buffer]));
  parentPort?.postMessage(reply, moved);
});
