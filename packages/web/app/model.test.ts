// What the page makes of events and registry entries, without a browser: groups in the order first
// seen, filters, and the cost with and without forking.
import { describe, expect, it } from "vitest";
import { PageModel, unforkedCostOf } from "./model.js";
import { markOf } from "./run-detail.js";
import type { ForkEvent, RunState } from "./shared.js";
import { keyTarget } from "./virtual-list.js";

const MODEL = "claude-sonnet-4-5";

function registered(
  runId: string,
  parent: string,
  extra: Partial<RunState> & { group?: string } = {},
): RunState {
  return {
    v: 1,
    run_id: runId,
    status: "queued",
    attempt: 0,
    last_seq: 0,
    created_at: 1,
    updated_at: 1,
    parent_agent_id: parent,
    ...extra,
  } as RunState;
}

function completed(runId: string, read: number, input: number): ForkEvent[] {
  const base = { v: 1 as const, run_id: runId, attempt: 1, ts: 1000 };
  const usage = {
    input_tokens: input,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: read,
    output_tokens: 100,
  };
  return [
    { ...base, seq: 1, type: "accepted", daemon_id: "d1", queue_wait_ms: 1, delivery: 1, resumed: false },
    { ...base, seq: 2, type: "started", model: MODEL, prefix_hash: null, cache_shared: true },
    {
      ...base,
      seq: 3,
      type: "llm.message",
      turn: 1,
      message: { role: "assistant", content: [{ type: "text", text: "done" }] },
      stop_reason: "end_turn",
      usage,
    },
  ];
}

describe("PageModel", () => {
  it("groups runs by parent (and group), in the order first seen, each group's runs in theirs", () => {
    const model = new PageModel();
    model.applyRunState(registered("r1", "alpha"));
    model.applyRunState(registered("r2", "beta", { group: "night" }));
    model.applyRunState(registered("r3", "alpha"));
    const lines = model.lines({ text: "", status: "all" });
    expect(lines.map((line) => (line.kind === "group" ? `# ${line.title}` : line.row.runId))).toEqual([
      "# alpha",
      "r1",
      "r3",
      "# beta · night",
      "r2",
    ]);
  });

  it("filters by every word of the search and by status, and ignores a replayed event", () => {
    const model = new PageModel();
    model.applyRunState(registered("r1", "alpha", { label: "slice one" }));
    model.applyRunState(registered("r2", "alpha", { label: "slice two" }));
    for (const event of completed("r1", 1000, 10)) expect(model.applyEvent(event)).toBe(true);
    expect(model.applyEvent(completed("r1", 1000, 10)[0]!)).toBe(false);
    const runIds = (text: string, status = "all") =>
      model.lines({ text, status }).flatMap((line) => (line.kind === "run" ? [line.row.runId] : []));
    expect(runIds("slice two")).toEqual(["r2"]);
    expect(runIds("SLICE d1")).toEqual(["r1"]);
    expect(runIds("", "running")).toEqual(["r1"]);
    expect(runIds("", "queued")).toEqual(["r2"]);
    expect(runIds("", "active")).toEqual(["r1", "r2"]);
    expect(model.counts()).toEqual(
      new Map([
        ["running", 1],
        ["queued", 1],
      ]),
    );
  });

  it("prices each group forked and as the same tokens sent uncached", () => {
    const model = new PageModel();
    model.applyRunState(registered("r1", "alpha"));
    for (const event of completed("r1", 9000, 1000)) model.applyEvent(event);
    const row = model.run("r1")!.row;
    // Every prompt token uncached costs more than 9,000 of them read from the cache.
    const unforked = unforkedCostOf(row)!;
    expect(unforked).toBeGreaterThan(row.usage.cost_usd!);
    const alone = [
      { key: "alpha", title: "alpha", runs: 1, forkedUsd: row.usage.cost_usd, unforkedUsd: unforked },
    ];
    expect(model.groupCosts()).toEqual(alone);
    // A model nobody priced is left out, not counted as free.
    model.applyRunState(registered("r2", "alpha"));
    model.applyEvent({ ...completed("r2", 1, 1)[1]!, model: "no-such-model" } as ForkEvent);
    model.applyEvent({ ...completed("r2", 1, 1)[2]! });
    expect(model.run("r2")!.row.usage.cost_usd).toBeNull();
    expect(model.groupCosts()).toEqual(alone);
  });
});

describe("keyTarget", () => {
  it("moves one row, a view, or to the ends", () => {
    expect(keyTarget("ArrowDown", 3, 100, 340, 34)).toBe(4);
    expect(keyTarget("k", 3, 100, 340, 34)).toBe(2);
    expect(keyTarget("PageDown", 3, 100, 340, 34)).toBe(12);
    expect(keyTarget("PageUp", 30, 100, 340, 34)).toBe(21);
    expect(keyTarget("Home", 30, 100, 340, 34)).toBe(0);
    expect(keyTarget("End", 3, 100, 340, 34)).toBe(99);
    expect(keyTarget("x", 3, 100, 340, 34)).toBeUndefined();
  });
});

describe("markOf", () => {
  const [accepted, started, message] = completed("r1", 1, 1) as [ForkEvent, ForkEvent, ForkEvent];
  const mark = (event: ForkEvent, previousAttempt: number) =>
    markOf({ kind: "event", event }, previousAttempt);

  it("marks failover: the first event of a new attempt, and a resumed run", () => {
    expect(mark(accepted, 0)).toBeUndefined();
    expect(mark({ ...started, attempt: 2 }, 1)).toBe("failover");
    expect(mark({ ...started, attempt: 2 }, 2)).toBeUndefined();
    expect(mark({ ...accepted, attempt: 2, resumed: true } as ForkEvent, 2)).toBe("failover");
  });

  it("marks cache breaks, permissions, tools, errors and the end", () => {
    const base = { v: 1 as const, run_id: "r1", seq: 9, attempt: 1, ts: 1, turn: 1 };
    expect(
      mark(
        { ...base, type: "cache.break", layer: "system", prompt_tokens: 9, cache_read_tokens: 0, detail: "" },
        1,
      ),
    ).toBe("cache-break");
    expect(
      mark({ ...base, type: "permission.requested", tool_use_id: "t", name: "Bash", timeout_ms: 1 }, 1),
    ).toBe("permission");
    expect(mark({ ...base, type: "tool.call", tool_use_id: "t", name: "Read", input: {} }, 1)).toBe("tool");
    expect(
      mark(
        { ...base, type: "tool.denied", tool_use_id: "t", name: "Bash", code: "tool_filter", reason: "" },
        1,
      ),
    ).toBe("error");
    expect(mark(message, 1)).toBeUndefined();
    expect(markOf({ kind: "unknown", type: "x.new", seq: 9, ts: 1, attempt: 1, raw: {} }, 1)).toBe("unknown");
  });
});
