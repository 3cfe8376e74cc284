// A glob the model writes is matched against names the model made. Compiled to a JavaScript
// RegExp, `*a*a*a*a*b` backtracks over a name of 200 `a`s in time polynomial in its length with the
// number of stars as exponent — seconds for four stars, hours for eight — in the daemon's event loop,
// where no abort reaches it: every run of the daemon, its heartbeats and its aborts, stopped.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolOutcome } from "@forkd/core";
import { createBuiltinToolDispatcher } from "@forkd/daemon";
import { afterAll, describe, expect, it } from "vitest";

const workspace = mkdtempSync(join(tmpdir(), "forkd-glob-redos-"));
const tools = createBuiltinToolDispatcher({ workspace, bashPolicy: "off" });
let n = 0;
const call = (name: string, input: Record<string, unknown>): Promise<ToolOutcome> =>
  tools.execute(
    { id: `toolu_${++n}`, name, input },
    { runId: "run-glob-redos", turn: 1, cwd: workspace, signal: new AbortController().signal },
  );

afterAll(() => rmSync(workspace, { recursive: true, force: true }));

describe("a glob is matched in time linear in the name", () => {
  it("Glob and Grep's glob answer at once for a backtracking pattern over a long name", async () => {
    const name = "a".repeat(200);
    expect(await call("Write", { file_path: `dir/${name}`, content: "a\n" })).toMatchObject({
      isError: false,
    });
    // Six stars: hours of backtracking before the fix, so a bound a thousand times what the linear
    // match takes still tells the two apart on a loaded machine.
    const glob = `${"*a".repeat(6)}*b`;
    for (const [tool, input] of [
      ["Glob", { pattern: glob, path: "dir" }],
      ["Glob", { pattern: `**/${glob}` }],
      ["Grep", { pattern: "a", glob }],
      ["Grep", { pattern: "a", glob: `dir/${glob}` }],
    ] as const) {
      const started = performance.now();
      const answer = await call(tool, input);
      expect(performance.now() - started, `${tool} ${JSON.stringify(input)}`).toBeLessThan(5_000);
      expect(answer.content).toMatch(/^No (files|matches) found/);
    }
    // The glob still means what it meant.
    expect((await call("Glob", { pattern: "*a*a", path: "dir" })).content).toContain(name);
    expect((await call("Grep", { pattern: "a", glob: "*a*a" })).content).toContain(name);
  });
});
