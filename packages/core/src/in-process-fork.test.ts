import { type ForkEvent, ForkEventSchema, type ForkPrefix } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { computeCacheKey } from "./cache-key.js";
import { createForkPrefix } from "./cache-safe-params.js";
import { RecursionGuardError } from "./errors.js";
import type { ForkParams } from "./fork-subagent.js";
import { buildForkedRequest } from "./forked-request.js";
import { type InProcessForkOptions, InProcessForkSubagent } from "./in-process-fork.js";
import { findRequestProblems } from "./request-shape.js";
import { type TestDispatcher, testDispatcher } from "./test-support/dispatcher.js";
import { loadFixture } from "./test-support/fixtures.js";
import {
  hangingStep,
  ScriptedLlmClient,
  type ScriptStep,
  textReply,
  toolReply,
  usage,
} from "./test-support/scripted-llm.js";

const REPORT = [
  "Scope: slice 1 of the codec audit",
  "Result: the decoder refuses deep JSON before parsing the schema.",
  "Key files: packages/protocol/src/codec.ts, packages/protocol/src/limits.ts",
  "Files changed: none",
  "Issues: none",
].join("\n");

function prefix48k(): ForkPrefix {
  const fixture = loadFixture("48k");
  return createForkPrefix(fixture.request, fixture.response);
}

function setup(steps: ScriptStep[], options: Partial<InProcessForkOptions> = {}) {
  const llm = new ScriptedLlmClient(steps);
  const dispatchers: TestDispatcher[] = [];
  const cwds: string[] = [];
  const subagent = new InProcessForkSubagent({
    llm,
    cwd: "/work/repo",
    dispatcherFactory: ({ cwd }) => {
      cwds.push(cwd);
      const dispatcher = testDispatcher();
      dispatchers.push(dispatcher);
      return dispatcher;
    },
    ...options,
  });
  return { llm, subagent, dispatchers, cwds };
}

function params(prefix: ForkPrefix | null, extra: Partial<ForkParams> = {}): ForkParams {
  return { prefix, directive: "Audit slice 1 of the codec.", parent: { agent_id: "parent-1" }, ...extra };
}

async function collect(events: AsyncIterable<ForkEvent>): Promise<ForkEvent[]> {
  const all: ForkEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe("InProcessForkSubagent end to end on the 48k fixture", () => {
  it("runs the fork to its report", async () => {
    const prefix = prefix48k();
    const fixture = loadFixture("48k");
    const forkCall = { tool_use_id: String(fixture.response.content[1]!.id), description: "slice 1" };
    const t = setup([
      toolReply(
        [
          { id: "t1", name: "Read", input: { file_path: "packages/protocol/src/codec.ts" } },
          { id: "t2", name: "Grep", input: { pattern: "MAX_JSON_DEPTH" } },
        ],
        {
          usage: usage({
            input_tokens: 300,
            cache_creation_input_tokens: 900,
            cache_read_input_tokens: 47_000,
            output_tokens: 80,
          }),
        },
      ),
      textReply(REPORT, {
        usage: usage({
          input_tokens: 200,
          cache_creation_input_tokens: 400,
          cache_read_input_tokens: 47_900,
          output_tokens: 120,
        }),
      }),
    ]);
    const handle = t.subagent.fork(
      params(prefix, { runId: "fork-slice-1", forkCall, limits: { max_turns: 10 } }),
    );
    expect(handle.runId).toBe("fork-slice-1");
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    if (outcome.status !== "completed") return;
    const { result } = outcome;
    expect(result).toMatchObject({
      final_text: REPORT,
      turns: 2,
      tool_uses: 2,
      cache_shared: true,
      stop: "end_turn",
      report: {
        scope: "slice 1 of the codec audit",
        result: "the decoder refuses deep JSON before parsing the schema.",
        key_files: ["packages/protocol/src/codec.ts", "packages/protocol/src/limits.ts"],
        files_changed: [],
        issues: "none",
      },
    });
    expect(result.usage).toMatchObject({
      input_tokens: 500,
      cache_write_5m_tokens: 1300,
      cache_read_tokens: 94_900,
      output_tokens: 200,
      llm_calls: 2,
    });
    const expectedCost = (500 * 3 + 1300 * 3.75 + 94_900 * 0.3 + 200 * 15) / 1e6;
    expect(result.usage.cost_usd).toBeCloseTo(expectedCost, 8);

    // The first request is exactly the forked request, and a valid one.
    const expected = buildForkedRequest(prefix, {
      runId: "fork-slice-1",
      directive: "Audit slice 1 of the codec.",
      forkCall,
    });
    expect(t.llm.requests[0]).toBe(JSON.stringify(expected.request));
    expect(findRequestProblems(expected.request)).toEqual([]);
    expect(t.dispatchers[0]!.executed.map((call) => call.name)).toEqual(["Read", "Grep"]);

    // The event log: valid, contiguous from 1, started first, completed last, no cache break.
    const events = await collect(handle.events());
    events.forEach((event, index) => {
      expect(event.seq).toBe(index + 1);
      expect(ForkEventSchema.parse(event)).toBeTruthy();
    });
    expect(events[0]).toMatchObject({
      type: "started",
      model: "claude-sonnet-4-6",
      prefix_hash: computeCacheKey(prefix.params).hash,
      cache_shared: true,
    });
    expect(events.at(-1)).toMatchObject({ type: "completed", result });
    expect(events.map((e) => e.type)).not.toContain("cache.break");
    expect(events.filter((e) => e.type === "tool.result")).toHaveLength(2);
  });
});

describe("InProcessForkSubagent", () => {
  it("returns the handle before it builds or sends anything, even for the 300k prefix", async () => {
    // How fast dispatch is, is measured by bench #2 (a timed assertion here would fail on a loaded
    // machine); what is tested is that fork() leaves the work to the run.
    const fixture = loadFixture("300k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const t = setup([textReply("done")]);
    const handle = t.subagent.fork(params(prefix));
    expect(t.llm.calls).toBe(0);
    expect(await handle.result()).toMatchObject({ status: "completed" });
    expect(t.llm.calls).toBe(1);
  });

  it("replays events from seq 1 to every reader, then follows live", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const t = setup([
      async () => {
        await gate;
        return textReply("done");
      },
    ]);
    const handle = t.subagent.fork(params(prefix48k()));
    const early = collect(handle.events());
    // Wait until the run is inside its model call, then start a second reader and let it finish.
    const iterator = handle.events()[Symbol.asyncIterator]();
    const seen: ForkEvent[] = [];
    while (seen.at(-1)?.type !== "llm.request") seen.push((await iterator.next()).value as ForkEvent);
    await iterator.return?.();
    release();
    const all = await early;
    const late = await collect(handle.events());
    expect(late).toEqual(all);
    expect(seen).toEqual(all.slice(0, seen.length));
    expect(all.map((e) => e.type)).toEqual([
      "started",
      "llm.request",
      "llm.delta",
      "llm.delta",
      "llm.message",
      "completed",
    ]);
  });

  it("aborts a running fork: the outcome is killed, not failed", async () => {
    let inCall!: () => void;
    const calling = new Promise<void>((resolve) => {
      inCall = resolve;
    });
    const t = setup([hangingStep(() => inCall())]);
    const handle = t.subagent.fork(params(prefix48k()));
    await calling;
    await handle.abort("the parent is done");
    expect(await handle.result()).toMatchObject({
      status: "killed",
      reason: "the parent is done",
      runId: handle.runId,
    });
    expect((await collect(handle.events())).at(-1)).toMatchObject({
      type: "aborted",
      reason: "the parent is done",
    });
  });

  it("aborts on dispose a run nobody awaited, and leaves an awaited one alone", async () => {
    const forgotten = setup([hangingStep()]);
    let seen: ForkEvent[] = [];
    let forgottenHandle: ReturnType<InProcessForkSubagent["fork"]> | undefined;
    {
      await using handle = forgotten.subagent.fork(params(prefix48k()));
      forgottenHandle = handle;
      seen = await (async () => {
        const events: ForkEvent[] = [];
        for await (const event of handle.events()) {
          events.push(event);
          if (event.type === "llm.request") break;
        }
        return events;
      })();
      expect(seen.at(-1)?.type).toBe("llm.request");
    }
    expect(await forgottenHandle.result()).toMatchObject({ status: "killed" });
    const awaited = setup([textReply("done")]);
    let outcome: Promise<unknown> | undefined;
    {
      await using handle = awaited.subagent.fork(params(prefix48k()));
      outcome = handle.result();
    }
    expect(await outcome).toMatchObject({ status: "completed" });
  });

  it("reports a disposed run as killed", async () => {
    const t = setup([hangingStep()]);
    const handle = t.subagent.fork(params(prefix48k()));
    await handle[Symbol.asyncDispose]();
    expect(await handle.result()).toMatchObject({
      status: "killed",
      reason: "disposed before its result was awaited",
    });
  });

  it("waits for the outcome in wait mode, and a signal kills the run", async () => {
    const t = setup([textReply("done"), hangingStep()]);
    expect(await t.subagent.forkAndWait(params(prefix48k()))).toMatchObject({ status: "completed" });
    const controller = new AbortController();
    const waiting = t.subagent.forkAndWait(params(prefix48k()), { signal: controller.signal });
    controller.abort("cancelled");
    expect(await waiting).toMatchObject({ status: "killed", reason: "cancelled" });
  });

  it("times out", async () => {
    const t = setup([hangingStep()]);
    const outcome = await t.subagent.forkAndWait(params(prefix48k(), { limits: { timeout_ms: 20 } }));
    expect(outcome).toMatchObject({ status: "timeout", error: { code: "timeout" } });
  });

  it("refuses invalid params and a fork from a fork at once", () => {
    const t = setup([]);
    expect(() => t.subagent.fork(params(prefix48k(), { directive: " " }))).toThrow(/directive/);
    expect(() => t.subagent.fork(params(prefix48k(), { runId: "a.b" }))).toThrow(/run id/);
    expect(() => t.subagent.fork(params(prefix48k(), { limits: { max_turns: -1 } }))).toThrow(/max_turns/);
    expect(() => t.subagent.fork(params(null))).toThrow(/defaultRequest/);
    expect(() => t.subagent.fork(params(prefix48k(), { isolation: { worktree: true } }))).toThrow(
      /createWorktree/,
    );
    expect(() => t.subagent.fork(params(prefix48k(), { permissions: { mode: "ask" } }))).toThrow(
      /permissionAsker/,
    );
    expect(() => t.subagent.fork(params(prefix48k(), { querySource: "fork:run-0" }))).toThrow(
      RecursionGuardError,
    );
    const child = buildForkedRequest(prefix48k(), { runId: "run-0", directive: "d" });
    const grandchild = createForkPrefix(child.request, {
      role: "assistant",
      content: [{ type: "text", text: "x" }],
    });
    expect(() => t.subagent.fork(params(grandchild))).toThrow(RecursionGuardError);
  });

  it("runs a fork without a prefix on the default request", async () => {
    const t = setup([textReply("done")], { defaultRequest: { model: "claude-haiku-4-5", max_tokens: 1000 } });
    const handle = t.subagent.fork(params(null));
    const outcome = await handle.result();
    expect(outcome).toMatchObject({ status: "completed", result: { cache_shared: false } });
    expect((await collect(handle.events()))[0]).toMatchObject({ prefix_hash: null, cache_shared: false });
    expect(t.llm.lastRequest().model).toBe("claude-haiku-4-5");
    expect(t.llm.lastRequest().messages).toHaveLength(1);
  });

  it("runs in a worktree and tells the child to translate paths", async () => {
    const t = setup([textReply("done")], {
      createWorktree: async ({ runId }) => ({ path: `/tmp/worktrees/${runId}` }),
    });
    await t.subagent.forkAndWait(params(prefix48k(), { runId: "wt-1", isolation: { worktree: true } }));
    expect(t.cwds).toEqual(["/tmp/worktrees/wt-1"]);
    expect(t.llm.requests[0]).toContain("/work/repo/src/a.ts is /tmp/worktrees/wt-1/src/a.ts");
  });

  it("fails a run whose worktree cannot be made", async () => {
    const t = setup([], { createWorktree: async () => Promise.reject(new Error("disk full")) });
    const outcome = await t.subagent.forkAndWait(params(prefix48k(), { isolation: { worktree: true } }));
    expect(outcome).toMatchObject({ status: "failed", error: { code: "workspace_unavailable" } });
  });

  it("denies calls that need approval under a deny policy", async () => {
    const t = setup([toolReply([{ id: "t1", name: "Write", input: {} }]), textReply("done")], {
      permissionAsker: {
        needsApproval: (call) => call.name === "Write",
        ask: async () => ({ decision: "allow" }),
      },
    });
    const outcome = await t.subagent.forkAndWait(params(prefix48k(), { permissions: { mode: "deny" } }));
    expect(outcome.status).toBe("completed");
    expect(t.dispatchers[0]!.executed).toEqual([]);
  });

  it("reports a cache break when a model override changes the cache key", async () => {
    const t = setup([
      textReply("done", {
        usage: usage({ input_tokens: 47_000, cache_creation_input_tokens: 500, cache_read_input_tokens: 0 }),
      }),
    ]);
    const handle = t.subagent.fork(params(prefix48k(), { overrides: { model: "claude-opus-4-5" } }));
    await handle.result();
    expect((await collect(handle.events())).find((e) => e.type === "cache.break")).toMatchObject({
      layer: "model",
    });
  });
});
