import type { GroupBudget, GroupSpend } from "@forkd/protocol";
import { budgetCapProof } from "@forkd/protocol/internal";
import { describe, expect, it } from "vitest";
import {
  admit,
  type CallToAdmit,
  capDistrust,
  capReached,
  chargeAbandoned,
  costOfCall,
  emptySpend,
  estimateCall,
  RESERVATION_LEASE_MS,
  settle,
} from "./group-spend.js";

const TOKEN = "a".repeat(64);
const NOW = 1_700_000_000_000;

function cap(bounds: GroupBudget["cap"], version = 2, token = TOKEN): GroupBudget {
  const unsigned = { v: 1, group_id: "g", cap: bounds, cap_version: version, updated_at: NOW } as const;
  return { ...unsigned, cap_proof: budgetCapProof(token, unsigned) };
}

function spend(
  spent: { cost_usd: number; tokens: number },
  reservations: Partial<GroupSpend["reservations"][number]>[] = [],
  capVersion = 2,
): GroupSpend {
  return {
    ...emptySpend("g", NOW),
    spent,
    cap_version: capVersion,
    reservations: reservations.map((reservation) => ({
      run_id: "other",
      attempt: 1,
      turn: 1,
      cost_usd: 0,
      tokens: 0,
      at: NOW,
      ...reservation,
    })),
  };
}

const call: CallToAdmit = {
  groupId: "g",
  runId: "run",
  attempt: 2,
  turn: 3,
  bound: () => ({ usd: 0.5, tokens: 100 }),
};

describe("admit", () => {
  it("a group with neither a cap nor a spend entry has no budget", () => {
    expect(admit(null, null, TOKEN, call, NOW)).toEqual({ kind: "unbudgeted" });
  });

  it("estimates the call's bound only to reserve it (it serialises the whole request)", () => {
    const unestimated = {
      ...call,
      bound: () => {
        throw new Error("estimated");
      },
    };
    expect(admit(null, null, TOKEN, unestimated, NOW)).toEqual({ kind: "unbudgeted" });
    expect(admit(cap({ max_cost_usd: 0 }), null, TOKEN, unestimated, NOW).kind).toBe("pause");
    expect(() => admit(cap({ max_cost_usd: 1 }), null, TOKEN, unestimated, NOW)).toThrow("estimated");
  });

  it("pauses when the cap entry is gone but the group spent under one (a parent deleted it)", () => {
    expect(admit(null, spend({ cost_usd: 0, tokens: 0 }), TOKEN, call, NOW)).toMatchObject({
      kind: "pause",
      reason: expect.stringContaining("cap entry is gone"),
    });
  });

  it("pauses under a cap signed with another key", () => {
    const forged = cap({ max_cost_usd: 100 }, 3, "b".repeat(64));
    expect(admit(forged, null, TOKEN, call, NOW)).toMatchObject({
      kind: "pause",
      reason: expect.stringContaining("proof"),
    });
  });

  it("pauses under a cap older than one obeyed (a replayed entry), not under the same version", () => {
    expect(
      admit(cap({ max_cost_usd: 1 }, 2), spend({ cost_usd: 0, tokens: 0 }, [], 3), TOKEN, call, NOW),
    ).toMatchObject({ kind: "pause", reason: expect.stringContaining("older than version 3") });
    expect(
      admit(cap({ max_cost_usd: 1 }, 3), spend({ cost_usd: 0, tokens: 0 }, [], 3), TOKEN, call, NOW).kind,
    ).toBe("go");
  });

  it("pauses once the spent cost reaches the cap, and admits just under it", () => {
    expect(
      admit(cap({ max_cost_usd: 1 }), spend({ cost_usd: 1, tokens: 0 }), TOKEN, call, NOW),
    ).toMatchObject({
      kind: "pause",
      reason: "the group spent $1.0000 of its $1 budget",
    });
    expect(
      admit(cap({ max_cost_usd: 1 }), spend({ cost_usd: 0.99999, tokens: 0 }), TOKEN, call, NOW).kind,
    ).toBe("go");
  });

  it("pauses once the spent tokens reach the cap, and admits just under it", () => {
    expect(
      admit(cap({ max_tokens: 500 }), spend({ cost_usd: 9, tokens: 500 }), TOKEN, call, NOW),
    ).toMatchObject({
      kind: "pause",
      reason: "the group used 500 of its 500 tokens",
    });
    expect(admit(cap({ max_tokens: 500 }), spend({ cost_usd: 9, tokens: 499 }), TOKEN, call, NOW).kind).toBe(
      "go",
    );
  });

  it("waits, without pausing, while the calls in flight may reach the cap", () => {
    const atCap = spend({ cost_usd: 0.4, tokens: 0 }, [{ cost_usd: 0.35 }, { cost_usd: 0.25 }]);
    expect(admit(cap({ max_cost_usd: 1 }), atCap, TOKEN, call, NOW)).toEqual({ kind: "wait" });
    const under = spend({ cost_usd: 0.4, tokens: 0 }, [{ cost_usd: 0.35 }, { cost_usd: 0.2499 }]);
    expect(admit(cap({ max_cost_usd: 1 }), under, TOKEN, call, NOW).kind).toBe("go");
    const tokensInFlight = spend({ cost_usd: 0, tokens: 100 }, [{ tokens: 400 }]);
    expect(admit(cap({ max_tokens: 500 }), tokensInFlight, TOKEN, call, NOW)).toEqual({ kind: "wait" });
    const tokensUnder = spend({ cost_usd: 0, tokens: 100 }, [{ tokens: 399 }]);
    expect(admit(cap({ max_tokens: 500 }), tokensUnder, TOKEN, call, NOW).kind).toBe("go");
  });

  it("admitted, the call's bound joins the reservations and the cap version obeyed is recorded", () => {
    const admission = admit(
      cap({ max_cost_usd: 1 }, 5),
      spend({ cost_usd: 0.1, tokens: 7 }, [{ run_id: "other", cost_usd: 0.2 }], 4),
      TOKEN,
      call,
      NOW,
    );
    expect(admission).toEqual({
      kind: "go",
      next: {
        ...spend({ cost_usd: 0.1, tokens: 7 }, [{ run_id: "other", cost_usd: 0.2 }], 5),
        reservations: [
          { run_id: "other", attempt: 1, turn: 1, cost_usd: 0.2, tokens: 0, at: NOW },
          { run_id: "run", attempt: 2, turn: 3, cost_usd: 0.5, tokens: 100, at: NOW },
        ],
      },
    });
  });

  it("a first call under a new cap creates the entry", () => {
    expect(admit(cap({ max_cost_usd: 1 }, 1), null, TOKEN, call, NOW)).toEqual({
      kind: "go",
      next: {
        ...emptySpend("g", NOW),
        cap_version: 1,
        reservations: [{ run_id: "run", attempt: 2, turn: 3, cost_usd: 0.5, tokens: 100, at: NOW }],
      },
    });
  });

  it("a first call's entry starts from nothing spent", () => {
    const admission = admit(cap({ max_cost_usd: 1 }, 1), null, TOKEN, call, NOW);
    expect(admission.kind === "go" && admission.next).toMatchObject({
      v: 1,
      group_id: "g",
      spent: { cost_usd: 0, tokens: 0 },
    });
  });

  it("keeps the reservations of other calls: another turn, another attempt, another run", () => {
    const others = [
      { run_id: "run", attempt: 2, turn: 2 },
      { run_id: "run", attempt: 1, turn: 3, at: NOW + 1 },
      { run_id: "other", attempt: 2, turn: 3 },
    ];
    // attempt 1 of `run` would be charged as abandoned by attempt 2: admit attempt 1's own call instead.
    const admission = admit(
      cap({ max_cost_usd: 10 }),
      spend({ cost_usd: 0, tokens: 0 }, others),
      TOKEN,
      call,
      NOW,
    );
    expect(
      admission.kind === "go" && admission.next.reservations.map((r) => [r.run_id, r.attempt, r.turn]),
    ).toEqual([
      ["run", 2, 2],
      ["other", 2, 3],
      ["run", 2, 3],
    ]);
    const sameAttempt = { ...call, attempt: 1 };
    const again = admit(
      cap({ max_cost_usd: 10 }),
      spend({ cost_usd: 0, tokens: 0 }, others),
      TOKEN,
      sameAttempt,
      NOW,
    );
    expect(again.kind === "go" && again.next.reservations.map((r) => [r.run_id, r.attempt, r.turn])).toEqual([
      ["run", 2, 2],
      ["other", 2, 3],
      ["run", 1, 3],
    ]);
  });

  it("a call admitted again (its write was lost to another) keeps one reservation", () => {
    const mine = { run_id: "run", attempt: 2, turn: 3, cost_usd: 0.5, tokens: 100 };
    const admission = admit(
      cap({ max_cost_usd: 10 }),
      spend({ cost_usd: 0, tokens: 0 }, [mine]),
      TOKEN,
      call,
      NOW,
    );
    expect(admission.kind === "go" && admission.next.reservations).toHaveLength(1);
  });
});

describe("chargeAbandoned", () => {
  it("charges an earlier attempt's reservation of the same run, at its bound", () => {
    const before = spend({ cost_usd: 1, tokens: 10 }, [
      { run_id: "run", attempt: 1, cost_usd: 0.5, tokens: 5 },
      { run_id: "run", attempt: 2, turn: 1, cost_usd: 0.25, tokens: 2 },
      { run_id: "other", attempt: 1, cost_usd: 0.125, tokens: 1 },
    ]);
    const after = chargeAbandoned(before, "run", 2, NOW);
    expect(after.spent).toEqual({ cost_usd: 1.5, tokens: 15 });
    expect(after.reservations.map((reservation) => [reservation.run_id, reservation.attempt])).toEqual([
      ["run", 2],
      ["other", 1],
    ]);
  });

  it("charges a reservation older than its lease, and keeps one exactly at it", () => {
    const before = spend({ cost_usd: 0, tokens: 0 }, [
      { run_id: "a", at: NOW - RESERVATION_LEASE_MS, cost_usd: 0.5 },
      { run_id: "b", at: NOW - RESERVATION_LEASE_MS - 1, cost_usd: 0.25 },
    ]);
    const after = chargeAbandoned(before, "run", 1, NOW);
    expect(after.spent.cost_usd).toBe(0.25);
    expect(after.reservations.map((reservation) => reservation.run_id)).toEqual(["a"]);
  });

  it("returns the entry itself when nothing is abandoned", () => {
    const before = spend({ cost_usd: 0, tokens: 0 }, [{ run_id: "run", attempt: 2 }]);
    expect(chargeAbandoned(before, "run", 2, NOW)).toBe(before);
  });
});

describe("settle", () => {
  it("replaces the call's reservation by its cost", () => {
    const before = spend({ cost_usd: 0.1, tokens: 10 }, [
      { run_id: "run", attempt: 2, turn: 3, cost_usd: 0.5, tokens: 100 },
      { run_id: "run", attempt: 2, turn: 2, cost_usd: 0.5, tokens: 100 },
    ]);
    const after = settle(before, { runId: "run", attempt: 2, turn: 3 }, { usd: 0.2, tokens: 40 }, NOW + 5);
    expect(after).toEqual({
      ...before,
      spent: { cost_usd: 0.3, tokens: 50 },
      reservations: [before.reservations[1]],
      updated_at: NOW + 5,
    });
  });

  it("settles only the call's own reservation, not one of another turn, attempt or run", () => {
    const before = spend({ cost_usd: 0, tokens: 0 }, [
      { run_id: "run", attempt: 2, turn: 2, cost_usd: 1 },
      { run_id: "run", attempt: 1, turn: 3, cost_usd: 2 },
      { run_id: "other", attempt: 2, turn: 3, cost_usd: 4 },
      { run_id: "run", attempt: 2, turn: 3, cost_usd: 8 },
    ]);
    const after = settle(before, { runId: "run", attempt: 2, turn: 3 }, { usd: 0.5, tokens: 1 }, NOW);
    expect(after!.reservations.map((reservation) => reservation.cost_usd)).toEqual([1, 2, 4]);
  });

  it("does nothing for a reservation already charged as abandoned (never charged twice)", () => {
    const before = spend({ cost_usd: 0.1, tokens: 10 }, [{ run_id: "run", attempt: 3, turn: 3 }]);
    expect(
      settle(before, { runId: "run", attempt: 2, turn: 3 }, { usd: 0.2, tokens: 40 }, NOW),
    ).toBeUndefined();
  });
});

describe("capDistrust and capReached", () => {
  it("trusts a cap with its proof, of the version obeyed or newer", () => {
    expect(capDistrust(cap({ max_cost_usd: 0.01 }, 2), null, TOKEN)).toBeUndefined();
    expect(
      capDistrust(cap({ max_cost_usd: 0.01 }, 2), spend({ cost_usd: 0, tokens: 0 }, [], 2), TOKEN),
    ).toBeUndefined();
  });
  it("refuses a zero cap at once", () => {
    expect(capReached(cap({ max_cost_usd: 0 }), null)).toBe("the group spent $0.0000 of its $0 budget");
  });
});

describe("the cap version obeyed", () => {
  it("is recorded when a trusted cap pauses or holds the group, so an older cap replayed later is refused", () => {
    const paused = admit(
      cap({ max_cost_usd: 0 }, 4),
      spend({ cost_usd: 0, tokens: 0 }, [], 3),
      TOKEN,
      call,
      NOW,
    );
    expect(paused).toMatchObject({ kind: "pause", record: { cap_version: 4, updated_at: NOW } });
    const held = admit(
      cap({ max_cost_usd: 1 }, 4),
      spend({ cost_usd: 0, tokens: 0 }, [{ cost_usd: 1 }], 3),
      TOKEN,
      call,
      NOW,
    );
    expect(held).toMatchObject({ kind: "wait", record: { cap_version: 4 } });
  });
  it("is not written again when it is already the cap's", () => {
    const paused = admit(
      cap({ max_cost_usd: 0 }, 3),
      spend({ cost_usd: 0, tokens: 0 }, [], 3),
      TOKEN,
      call,
      NOW,
    );
    expect(paused).toEqual({ kind: "pause", reason: expect.any(String) });
  });
  it("is never taken from a cap without its proof", () => {
    const forged = admit(
      cap({ max_cost_usd: 0 }, 9, "b".repeat(64)),
      spend({ cost_usd: 0, tokens: 0 }),
      TOKEN,
      call,
      NOW,
    );
    expect(forged).toEqual({ kind: "pause", reason: expect.stringContaining("proof") });
  });
});

describe("estimateCall and costOfCall", () => {
  const request = {
    model: "claude-sonnet-4-5",
    max_tokens: 200,
    system: "s".repeat(300),
    messages: [{ role: "user" as const, content: "u".repeat(3000) }],
  };

  it("bounds a call from above: every input token at the full price, max_tokens of output", () => {
    const estimate = estimateCall(request, "claude-sonnet-4-5");
    // 3,300 characters of text plus the JSON around it, at 3 characters a token.
    expect(estimate.tokens).toBeGreaterThan(1100 + 200);
    expect(estimate.tokens).toBeLessThan(1100 + 200 + 30);
    const actual = costOfCall(
      { input_tokens: 900, output_tokens: 200, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      "claude-sonnet-4-5",
    );
    expect(actual.tokens).toBe(1100);
    expect(estimate.usd).toBeGreaterThan(actual.usd);
  });

  it("counts the tools in the bound, and every kind of token in a call's cost", () => {
    const withTools = { ...request, tools: [{ name: "t", description: "d".repeat(3000), input_schema: {} }] };
    expect(estimateCall(withTools as typeof request, "claude-sonnet-4-5").tokens).toBeGreaterThan(
      estimateCall(request, "claude-sonnet-4-5").tokens + 999,
    );
    const cost = costOfCall(
      {
        input_tokens: 1,
        output_tokens: 2,
        cache_read_input_tokens: 4,
        cache_creation_input_tokens: 24,
        cache_creation: { ephemeral_5m_input_tokens: 8, ephemeral_1h_input_tokens: 16 },
      },
      "claude-sonnet-4-5",
    );
    expect(cost.tokens).toBe(31);
  });

  it("prices an unknown model at zero but still counts its tokens", () => {
    expect(estimateCall(request, "no-such-model").usd).toBe(0);
    expect(costOfCall({ input_tokens: 5, output_tokens: 6 }, "no-such-model")).toEqual({
      usd: 0,
      tokens: 11,
    });
  });
});
