// RE2 matches in time linear in the text, but also in the pattern's size: a counted repetition such
// as `[^!]{300}` followed by classes costs about 8 s per MiB of text. Matched in the daemon's event
// loop, one such Grep over a 10 MiB file held it for over a minute: every run of the daemon stalled,
// no abort reached the Grep, and the daemon's presence beats stopped, so the cluster handed all its
// runs to other daemons — which ran the interrupted Grep (safe to repeat) again. Grep now matches on
// a worker thread, stops at a time limit, and is aborted at once.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolOutcome } from "@forkd/core";
import { createBuiltinToolDispatcher } from "@forkd/daemon";
import { afterAll, describe, expect, it } from "vitest";

const workspace = mkdtempSync(join(tmpdir(), "forkd-grep-cost-"));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

// One 2 MiB line of digits and letters: no line break bounds the pattern's work.
let seed = 1;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
const alphabet = "abcdwq0123456789xyzk";
writeFileSync(
  join(workspace, "bundle.min.js"),
  Array.from({ length: 2 * 1024 * 1024 }, () => alphabet[Math.floor(random() * alphabet.length)]).join(""),
);
/** About 8 s of matching per MiB of the line above: about 16 s for the file, if nothing stops it. */
const COSTLY = `[^!]{300}${"[xyz][0-9][a-d]".repeat(4)}`;

let n = 0;
function grep(
  input: Record<string, unknown>,
  options: { signal?: AbortSignal; grepTimeLimitMs?: number } = {},
) {
  const tools = createBuiltinToolDispatcher({
    workspace,
    bashPolicy: "off",
    ...(options.grepTimeLimitMs === undefined ? {} : { grepTimeLimitMs: options.grepTimeLimitMs }),
  });
  return tools.execute(
    { id: `toolu_${++n}`, name: "Grep", input },
    {
      runId: "run-grep-cost",
      turn: 1,
      cwd: workspace,
      signal: options.signal ?? new AbortController().signal,
    },
  );
}

describe("a costly pattern cannot hold the daemon", () => {
  it("leaves the event loop free while it matches, and an abort ends it at once", async () => {
    const controller = new AbortController();
    const pending = grep({ pattern: COSTLY, path: "bundle.min.js" }, { signal: controller.signal });
    // Twenty turns of the event loop while the Grep runs: matched in the event loop, none would come
    // before the whole 16 s match was over, and the abort would come too late to stop anything.
    let settled: ToolOutcome | undefined;
    void pending.then((outcome) => {
      settled = outcome;
    });
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(settled).toBeUndefined();
    const abortedAt = performance.now();
    controller.abort(new Error("stop"));
    const outcome = await pending;
    expect(outcome.content).toMatch(/abort/i);
    // An abort that had to wait for the match would arrive seconds later.
    expect(performance.now() - abortedAt).toBeLessThan(2_000);
  });

  it("stops matching at the time limit and tells the model how to narrow the search", async () => {
    const outcome = await grep({ pattern: COSTLY, path: "bundle.min.js" }, { grepTimeLimitMs: 300 });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(
      /^Grep stopped: matching took longer than 0\.3 s\. The pattern is too costly/,
    );
    // A cheap pattern over the same file is well inside the same limit.
    const cheap = await grep({ pattern: "kkkkkkkkkk", path: "bundle.min.js" }, { grepTimeLimitMs: 3_000 });
    expect(cheap).toMatchObject({ isError: false, content: "No files found" });
  });
});
