// Table-driven prompt-cache scenarios, sent over real HTTP to a simulator with a manual clock.
// Token arithmetic of the hand-built requests (the documented tokenizer): a block costs its
// characters / 4 plus 3, plus 4 more when it is the first block of a message; every request adds 3
// uncached tokens. So a system block of 2000 tokens of text is 2003, a one-block user message of
// 500 tokens of text is 507, and such a request totals 2003 + 507 + 3 = 2513.
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { countTokens } from "./prompt.js";
import { type Sim, startSim } from "./server.js";
import {
  EPHEMERAL,
  type ExpectedUsage,
  forkChild,
  loadFixture,
  ONE_HOUR,
  post,
  scripted,
  text,
  tokensOf,
  tool,
  usageOf,
} from "./test-support.js";
import type { CacheControl, MessagesRequest, Usage } from "./types.js";

const MODEL = "claude-sonnet-4-6"; // minimum cacheable prompt: 1024 tokens
const SYSTEM = tokensOf(2000, "system"); // block: 2003
const SYSTEM_B = tokensOf(2000, "other system"); // block: 2003
const U500 = tokensOf(500, "user500"); // one-block message: 507
const U1500 = tokensOf(1500, "user1500"); // one-block message: 1507
const T1 = (cc?: CacheControl) => tool("T1", 600, cc); // 603
const T2 = (cc?: CacheControl) => tool("T2", 600, cc); // 603

function request(over: Partial<MessagesRequest> = {}): MessagesRequest {
  return { model: MODEL, max_tokens: 4096, messages: [{ role: "user", content: U500 }], ...over };
}
const sys = (cc?: CacheControl, body = SYSTEM) => [text(body, cc)];
const user = (body: string, cc?: CacheControl) => ({ role: "user" as const, content: [text(body, cc)] });
const assistant = (body: string) => ({ role: "assistant" as const, content: [text(body)] });
/** A message of `n` text blocks of 10 tokens each (first: 17, others: 13), cache_control on the last. */
const manyBlocks = (role: "user" | "assistant", n: number, label: string, cc?: CacheControl) => ({
  role,
  content: Array.from({ length: n }, (_, i) =>
    text(tokensOf(10, `${label}${i}`), i === n - 1 ? cc : undefined),
  ),
});
const usage = (input: number, read: number, write5m: number, write1h = 0): ExpectedUsage => ({
  input,
  read,
  write5m,
  write1h,
});

type Step =
  | { send: MessagesRequest; key?: string; expect: ExpectedUsage }
  | { send: MessagesRequest; key?: string; status: number; message: RegExp }
  | { parallel: MessagesRequest; count: number; expect: ExpectedUsage }
  | { advance: number };

interface Scenario {
  name: string;
  steps: Step[];
}

const S1 = request({ system: sys(EPHEMERAL) });
const TWO_BP = request({ system: sys(EPHEMERAL), messages: [user(U1500, EPHEMERAL)] });
const TOOLS_SYSTEM = request({ tools: [T1(), T2(EPHEMERAL)], system: sys(EPHEMERAL) });
const THREE_BP = request({
  tools: [T1(), T2(EPHEMERAL)],
  system: sys(EPHEMERAL),
  messages: [user(U1500, EPHEMERAL)],
});
const A = tokensOf(1200, "A"); // one-block message: 1207

const scenarios: Scenario[] = [
  { name: "cold write", steps: [{ send: S1, expect: usage(510, 0, 2003) }] },
  {
    name: "warm read",
    steps: [
      { send: S1, expect: usage(510, 0, 2003) },
      { send: S1, expect: usage(510, 2003, 0) },
    ],
  },
  {
    name: "two breakpoints: the earlier one hits when only the later part changed",
    steps: [
      { send: TWO_BP, expect: usage(3, 0, 3510) },
      {
        send: request({ system: sys(EPHEMERAL), messages: [user(tokensOf(1500, "changed"), EPHEMERAL)] }),
        expect: usage(3, 2003, 1507),
      },
      { send: TWO_BP, expect: usage(3, 3510, 0) },
    ],
  },
  {
    name: "conversation grows: the lookback finds the previous turn's entry",
    steps: [
      { send: request({ system: sys(), messages: [user(U1500, EPHEMERAL)] }), expect: usage(3, 0, 3510) },
      {
        send: request({
          system: sys(),
          messages: [user(U1500), assistant(tokensOf(100, "a1")), user(tokensOf(200, "u2"), EPHEMERAL)],
        }),
        expect: usage(3, 3510, 107 + 207),
      },
    ],
  },
  {
    name: "beyond the 20-block lookback: 21 blocks after the entry miss, 20 hit",
    steps: [
      { send: request({ system: sys(), messages: [user(A, EPHEMERAL)] }), expect: usage(3, 0, 3210) },
      {
        // blocks: 0 system, 1 A, 2..11 assistant, 12..22 user; breakpoint 22 looks back to 2 only
        send: request({
          system: sys(),
          messages: [user(A), manyBlocks("assistant", 10, "a"), manyBlocks("user", 11, "u", EPHEMERAL)],
        }),
        expect: usage(3, 0, 2003 + 1207 + 134 + 147),
      },
      {
        // breakpoint 21 looks back to 1: reads the first request's entry
        send: request({
          system: sys(),
          messages: [user(A), manyBlocks("assistant", 10, "a"), manyBlocks("user", 10, "u", EPHEMERAL)],
        }),
        expect: usage(3, 3210, 134 + 134),
      },
    ],
  },
  {
    name: "below the minimum: nothing cached, no error",
    steps: [
      {
        send: request({
          system: sys(EPHEMERAL, tokensOf(500, "small")),
          messages: [user(tokensOf(100, "u"))],
        }),
        expect: usage(613, 0, 0),
      },
      {
        send: request({
          system: sys(EPHEMERAL, tokensOf(500, "small")),
          messages: [user(tokensOf(100, "u"))],
        }),
        expect: usage(613, 0, 0),
      },
    ],
  },
  {
    name: "minimum per model: Haiku 4.5 needs 4096, Sonnet 4.6 1024",
    steps: [
      {
        send: request({
          model: "claude-haiku-4-5",
          system: sys(EPHEMERAL, tokensOf(3000, "mid")),
          messages: [user(tokensOf(100, "u"))],
        }),
        expect: usage(3113, 0, 0),
      },
      {
        send: request({
          system: sys(EPHEMERAL, tokensOf(3000, "mid")),
          messages: [user(tokensOf(100, "u"))],
        }),
        expect: usage(110, 0, 3003),
      },
    ],
  },
  {
    name: "first breakpoint below the minimum, second above: one write from the start",
    steps: [
      {
        send: request({
          system: sys(EPHEMERAL, tokensOf(500, "small")),
          messages: [user(tokensOf(1000, "u"), EPHEMERAL)],
        }),
        expect: usage(3, 0, 1510),
      },
      {
        send: request({
          system: sys(EPHEMERAL, tokensOf(500, "small")),
          messages: [user(tokensOf(1000, "u"), EPHEMERAL)],
        }),
        expect: usage(3, 1510, 0),
      },
    ],
  },
  {
    name: "5-minute expiry, refreshed by every read",
    steps: [
      { send: S1, expect: usage(510, 0, 2003) },
      { advance: 299_999 },
      { send: S1, expect: usage(510, 2003, 0) },
      { advance: 299_999 },
      { send: S1, expect: usage(510, 2003, 0) },
      { advance: 300_000 },
      { send: S1, expect: usage(510, 0, 2003) },
    ],
  },
  {
    name: "1-hour TTL",
    steps: [
      { send: request({ system: sys(ONE_HOUR) }), expect: usage(510, 0, 0, 2003) },
      { advance: 59 * 60_000 },
      { send: request({ system: sys(ONE_HOUR) }), expect: usage(510, 2003, 0, 0) },
      { advance: 60 * 60_000 },
      { send: request({ system: sys(ONE_HOUR) }), expect: usage(510, 0, 0, 2003) },
    ],
  },
  {
    name: "1h before 5m: each stretch charged at its own TTL; the 5m part expires first",
    steps: [
      {
        send: request({ system: sys(ONE_HOUR), messages: [user(U1500, EPHEMERAL)] }),
        expect: usage(3, 0, 1507, 2003),
      },
      { advance: 6 * 60_000 },
      {
        send: request({ system: sys(ONE_HOUR), messages: [user(U1500, EPHEMERAL)] }),
        expect: usage(3, 2003, 1507, 0),
      },
    ],
  },
  {
    name: "5m before 1h is a 400",
    steps: [
      {
        send: request({ system: sys(EPHEMERAL), messages: [user(U1500, ONE_HOUR)] }),
        status: 400,
        message: /ttl='1h'.*ttl='5m'/,
      },
    ],
  },
  {
    name: "more than 4 breakpoints is a 400 (the automatic one counts)",
    steps: [
      {
        send: request({
          tools: [
            T1(EPHEMERAL),
            T2(EPHEMERAL),
            tool("T3", 50, EPHEMERAL),
            tool("T4", 50, EPHEMERAL),
            tool("T5", 50, EPHEMERAL),
          ],
        }),
        status: 400,
        message: /A maximum of 4 blocks with cache_control may be provided\. Found 5\./,
      },
      {
        send: request({
          tools: [T1(EPHEMERAL), T2(EPHEMERAL), tool("T3", 50, EPHEMERAL)],
          system: sys(EPHEMERAL),
          cache_control: EPHEMERAL,
        }),
        status: 400,
        message: /Found 5\./,
      },
    ],
  },
  {
    name: "parallel identical requests all miss before the first response starts, then hit",
    steps: [
      {
        parallel: request({
          system: sys(EPHEMERAL),
          messages: [user(scripted(500, "parallel", "@sim ttft 800"))],
        }),
        count: 3,
        expect: usage(510, 0, 2003),
      },
      {
        send: request({
          system: sys(EPHEMERAL),
          messages: [user(scripted(500, "parallel", "@sim ttft 800"))],
        }),
        expect: usage(510, 2003, 0),
      },
    ],
  },
  {
    name: "tool order changed: everything misses",
    steps: [
      { send: TOOLS_SYSTEM, expect: usage(510, 0, 1206 + 2003) },
      {
        send: request({ tools: [T2(), T1(EPHEMERAL)], system: sys(EPHEMERAL) }),
        expect: usage(510, 0, 1206 + 2003),
      },
      { send: TOOLS_SYSTEM, expect: usage(510, 3209, 0) },
    ],
  },
  {
    name: "system changed: tools stay cached",
    steps: [
      { send: TOOLS_SYSTEM, expect: usage(510, 0, 3209) },
      {
        send: request({ tools: [T1(), T2(EPHEMERAL)], system: sys(EPHEMERAL, SYSTEM_B) }),
        expect: usage(510, 1206, 2003),
      },
    ],
  },
  {
    name: "thinking changed: message entries miss, tools and system read",
    steps: [
      { send: THREE_BP, expect: usage(3, 0, 4716) },
      {
        send: { ...THREE_BP, thinking: { type: "enabled", budget_tokens: 2048 } },
        expect: usage(3, 3209, 1507),
      },
      {
        send: { ...THREE_BP, thinking: { type: "enabled", budget_tokens: 2048 } },
        expect: usage(3, 4716, 0),
      },
      {
        send: { ...THREE_BP, thinking: { type: "enabled", budget_tokens: 3000 } },
        expect: usage(3, 3209, 1507),
      },
    ],
  },
  {
    name: "tool_choice changed: message entries miss, tools and system read",
    steps: [
      { send: THREE_BP, expect: usage(3, 0, 4716) },
      { send: { ...THREE_BP, tool_choice: { type: "any" } }, expect: usage(3, 3209, 1507) },
      { send: { ...THREE_BP, tool_choice: { type: "auto" } }, expect: usage(3, 4716, 0) },
    ],
  },
  {
    name: "a different API key misses",
    steps: [
      { send: S1, key: "key-a", expect: usage(510, 0, 2003) },
      { send: S1, key: "key-b", expect: usage(510, 0, 2003) },
      { send: S1, key: "key-a", expect: usage(510, 2003, 0) },
    ],
  },
  {
    name: "automatic top-level cache_control: breakpoint on the last block, moving with the conversation",
    steps: [
      {
        send: request({ system: sys(), messages: [user(U1500)], cache_control: EPHEMERAL }),
        expect: usage(3, 0, 3510),
      },
      {
        send: request({
          system: sys(),
          messages: [user(U1500), assistant(tokensOf(100, "a1")), user(tokensOf(200, "u2"))],
          cache_control: EPHEMERAL,
        }),
        expect: usage(3, 3510, 314),
      },
    ],
  },
  {
    name: "a request refused before its response starts writes nothing",
    steps: [
      {
        send: request({
          system: sys(EPHEMERAL),
          messages: [user(scripted(500, "f", "@sim fault-once 529"))],
        }),
        status: 529,
        message: /Overloaded/,
      },
      {
        send: request({
          system: sys(EPHEMERAL),
          messages: [user(scripted(500, "f", "@sim fault-once 529"))],
        }),
        expect: usage(510, 0, 2003),
      },
      {
        send: request({
          system: sys(EPHEMERAL),
          messages: [user(scripted(500, "f", "@sim fault-once 529"))],
        }),
        expect: usage(510, 2003, 0),
      },
    ],
  },
];

let sim: Sim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

function checkSum(req: MessagesRequest, u: Usage): void {
  expect(u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens).toBe(
    countTokens(req).total,
  );
  expect(u.cache_creation_input_tokens).toBe(
    u.cache_creation.ephemeral_5m_input_tokens + u.cache_creation.ephemeral_1h_input_tokens,
  );
}

describe("prompt cache scenarios", () => {
  it("has at least 15 scenarios", () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(15);
  });

  it.each(scenarios)("$name", async ({ steps }) => {
    const clock = new ManualClock(1_700_000_000_000);
    sim = await startSim({ clock });
    for (const [i, step] of steps.entries()) {
      const where = `step ${i}`;
      if ("advance" in step) {
        clock.advance(step.advance);
      } else if ("parallel" in step) {
        const before = sim.requests().length;
        const replies = await Promise.all(
          Array.from({ length: step.count }, () => post(sim!, step.parallel)),
        );
        const entries = sim.requests().slice(before);
        const firstStart = Math.min(...entries.map((e) => e.firstByteAt ?? Number.POSITIVE_INFINITY));
        // Precondition of the scenario: every request was accepted before any response began.
        for (const e of entries) expect(e.acceptedAt, where).toBeLessThan(firstStart);
        for (const r of replies) {
          expect(r.status, where).toBe(200);
          expect(usageOf(r.body.usage), where).toEqual(step.expect);
          checkSum(step.parallel, r.body.usage);
        }
      } else if ("status" in step) {
        const r = await post<{ type: string; error: { type: string; message: string } }>(sim, step.send, {
          key: step.key,
        });
        expect(r.status, where).toBe(step.status);
        expect(r.body.type).toBe("error");
        expect(r.body.error.message, where).toMatch(step.message);
      } else {
        const r = await post(sim, step.send, { key: step.key });
        expect(r.status, `${where}: ${JSON.stringify(r.body)}`).toBe(200);
        expect(usageOf(r.body.usage), where).toEqual(step.expect);
        checkSum(step.send, r.body.usage);
      }
    }
  });
});

describe("the fork shape of the 48k fixture", () => {
  const fixture = loadFixture("parent-turn-48k");
  const parent: MessagesRequest = { ...fixture.request, stream: false };
  const children = [1, 2, 3, 4].map((i) =>
    forkChild(parent, fixture.response, `Child ${i}: summarise slice ${i} of the work.`),
  );
  const parentCount = countTokens(parent);
  const parentPrefix = parentCount.total - parentCount.overhead; // every block up to the last breakpoint
  const childCount = countTokens(children[0]!);
  const lastShared = childCount.blocks.findLastIndex((b) => b.type === "tool_result");
  const childPrefix = childCount.blocks[lastShared]!.cumulative;

  it("has the shape the scenario assumes", () => {
    expect(parent.tools?.at(-1)?.cache_control).toEqual(EPHEMERAL);
    expect(childCount.blocks.length - lastShared).toBe(2); // only the directive follows the breakpoint
    for (const c of children) expect(countTokens(c).total).toBe(childCount.total); // same-length directives
  });

  it("parent writes; child 1 reads the parent's prefix and writes the delta; children 2..N read it all", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const p = await post(sim, parent);
    expect(p.status).toBe(200);
    expect(usageOf(p.body.usage)).toEqual({
      input: parentCount.overhead,
      read: 0,
      write5m: parentPrefix,
      write1h: 0,
    });

    const first = await post(sim, children[0]);
    expect(usageOf(first.body.usage)).toEqual({
      input: childCount.total - childPrefix,
      read: parentPrefix,
      write5m: childPrefix - parentPrefix,
      write1h: 0,
    });
    for (const child of children.slice(1)) {
      const r = await post(sim, child);
      expect(usageOf(r.body.usage)).toEqual({
        input: childCount.total - childPrefix,
        read: childPrefix,
        write5m: 0,
        write1h: 0,
      });
      checkSum(child, r.body.usage);
    }
  });

  it("children fired at the same instant all read the parent's prefix and all write the delta", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    await post(sim, parent);
    const slow = [1, 2, 3].map((i) =>
      forkChild(parent, fixture.response, `Child ${i}: look.\n@sim ttft 800`),
    );
    const before = sim.requests().length;
    const replies = await Promise.all(slow.map((c) => post(sim!, c)));
    const entries = sim.requests().slice(before);
    const firstStart = Math.min(...entries.map((e) => e.firstByteAt!));
    for (const e of entries) expect(e.acceptedAt).toBeLessThan(firstStart);
    const count = countTokens(slow[0]);
    const prefix = count.blocks.findLast((b) => b.type === "tool_result")!.cumulative;
    for (const r of replies) {
      expect(usageOf(r.body.usage)).toEqual({
        input: count.total - prefix,
        read: parentPrefix,
        write5m: prefix - parentPrefix,
        write1h: 0,
      });
    }
  });
});
