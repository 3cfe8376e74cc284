import type { AssistantMessage, CacheSafeParams, ForkPrefix, MessageParam } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { listBreakpoints } from "./breakpoints.js";
import { createForkPrefix } from "./cache-safe-params.js";
import { FORK_PLACEHOLDER_RESULT, parseDirectiveBlock } from "./directive.js";
import { buildForkedRequest, FORK_ACKNOWLEDGEMENT, type ForkedRequest } from "./forked-request.js";
import { findRequestProblems } from "./request-shape.js";
import { FIXTURE_NAMES, loadFixture } from "./test-support/fixtures.js";

type Block = Record<string, unknown>;

function fixturePrefix(name: (typeof FIXTURE_NAMES)[number]): ForkPrefix {
  const fixture = loadFixture(name);
  return createForkPrefix(fixture.request, fixture.response);
}

// The request's JSON with the directive block cut out: everything siblings must share.
function sharedBytes(forked: ForkedRequest): { before: string; after: string } {
  const text = JSON.stringify(forked.request);
  const directive = JSON.stringify(
    (forked.request.messages[forked.directive.messageIndex]!.content as Block[])[forked.directive.blockIndex],
  );
  const at = text.lastIndexOf(directive);
  return { before: text.slice(0, at), after: text.slice(at + directive.length) };
}

function children(prefix: ForkPrefix, count: number, options: { strictAlternation?: boolean } = {}) {
  return Array.from({ length: count }, (_, i) =>
    buildForkedRequest(prefix, {
      runId: `child-${i}`,
      directive: `Work on slice ${i}.`,
      forkCall: { tool_use_id: `toolu_${i}`, description: `slice ${i}` },
      ...options,
    }),
  );
}

describe("buildForkedRequest on the fixtures", () => {
  for (const name of FIXTURE_NAMES) {
    for (const strictAlternation of [false, true]) {
      it(`${name}${strictAlternation ? " (strict alternation)" : ""}: siblings are byte-identical up to the directive block`, () => {
        const prefix = fixturePrefix(name);
        const forks = children(prefix, 4, { strictAlternation });
        const first = sharedBytes(forks[0]!);
        for (const fork of forks) {
          const shared = sharedBytes(fork);
          expect(shared.before).toBe(first.before);
          expect(shared.after).toBe(first.after);
          expect(shared.after).toBe("]}]}");
          expect(findRequestProblems(fork.request)).toEqual([]);
          expect(fork.shape).toBe("tool_use_reply");
        }
        const texts = forks.map((fork) => JSON.stringify(fork.request));
        expect(new Set(texts).size).toBe(4);
      });
    }

    it(`${name}: keeps the parent's messages and reply bit for bit`, () => {
      const fixture = loadFixture(name);
      const prefix = createForkPrefix(fixture.request, fixture.response);
      const before = JSON.stringify(prefix);
      const [fork] = children(prefix, 1);
      expect(JSON.stringify(prefix)).toBe(before);
      const strip = (value: unknown) =>
        JSON.stringify(value, (key, inner) => (key === "cache_control" ? undefined : inner));
      const inherited = fork!.request.messages.slice(0, fork!.inheritedMessageCount);
      expect(strip(inherited)).toBe(strip(fixture.request.messages));
      expect(strip(fork!.request.messages[fork!.inheritedMessageCount])).toBe(strip(fixture.response));
      expect(strip(fork!.request.tools)).toBe(strip(fixture.request.tools));
      expect(strip(fork!.request.system)).toBe(strip(fixture.request.system));
    });

    it(`${name}: answers every tool_use with the placeholder and puts the breakpoint on the last one`, () => {
      const prefix = fixturePrefix(name);
      const [fork] = children(prefix, 1);
      const last = fork!.request.messages.at(-1)!.content as Block[];
      const calls = prefix.reply!.content.filter((block) => block.type === "tool_use");
      expect(last.slice(0, calls.length)).toEqual(
        calls.map((call, i) => ({
          type: "tool_result",
          tool_use_id: call.id,
          content: FORK_PLACEHOLDER_RESULT,
          ...(i === calls.length - 1 ? { cache_control: { type: "ephemeral" } } : {}),
        })),
      );
      expect(fork!.breakpoint).toEqual({
        area: "messages",
        messageIndex: fork!.request.messages.length - 1,
        blockIndex: calls.length - 1,
      });
      const breakpoints = listBreakpoints(fork!.request);
      expect(breakpoints.length).toBeLessThanOrEqual(4);
      expect(breakpoints.at(-1)!.location).toEqual(fork!.breakpoint);
      expect(parseDirectiveBlock(String(last.at(-1)!.text))?.runId).toBe("child-0");
    });
  }

  it("keeps the parent's breakpoints and drops the earliest beyond four", () => {
    const prefix = fixturePrefix("48k");
    expect(listBreakpoints(prefix.params).map((b) => b.location.area)).toEqual([
      "tools",
      "system",
      "messages",
    ]);
    const [fork] = children(prefix, 1);
    expect(listBreakpoints(fork!.request).map((b) => b.location.area)).toEqual([
      "tools",
      "system",
      "messages",
      "messages",
    ]);
    const crowded = structuredClone(prefix);
    (crowded.params.messages[0]!.content as Block[])[0]!.cache_control = { type: "ephemeral" };
    const [crowdedFork] = children(crowded, 1);
    const kept = listBreakpoints(crowdedFork!.request);
    expect(kept).toHaveLength(4);
    expect(kept[0]!.location.area).toBe("system");
    expect(findRequestProblems(crowdedFork!.request)).toEqual([]);
  });

  it("leaves room for the breakpoint a top-level cache_control puts on the directive", () => {
    // The parent's three markers, the fork's, and automatic caching's on the directive would be five.
    const prefix = fixturePrefix("4k");
    expect(listBreakpoints(prefix.params)).toHaveLength(3);
    for (const ttl of [undefined, "1h"] as const) {
      const automatic = structuredClone(prefix);
      (automatic.params as Block).cache_control = ttl ? { type: "ephemeral", ttl } : { type: "ephemeral" };
      const forked = buildForkedRequest(automatic, { runId: "r1", directive: "d" });
      expect(findRequestProblems(forked.request), String(ttl)).toEqual([]);
      const kept = listBreakpoints(forked.request);
      // The fork's own marker stays, 1h when the automatic breakpoint after it is.
      expect(kept.at(-1)).toEqual({ location: forked.breakpoint, ttl: ttl ?? "5m" });
      expect(kept).toHaveLength(ttl === undefined ? 3 : 1);
    }
  });

  it("never lets a 1h breakpoint follow a 5m one", () => {
    const prefix = fixturePrefix("4k");
    const forked = buildForkedRequest(prefix, { runId: "r1", directive: "d", breakpointTtl: "1h" });
    const ttls = listBreakpoints(forked.request).map((b) => b.ttl);
    expect(ttls.at(-1)).toBe("1h");
    expect(ttls.includes("5m")).toBe(false);
    expect(findRequestProblems(forked.request)).toEqual([]);
    // The parent's own order is invalid (tools 5m, then system 1h): the 5m marker before the 1h one goes.
    const mixed = structuredClone(prefix);
    ((mixed.params.system as Block[])[1] as Block).cache_control = { type: "ephemeral", ttl: "1h" };
    const kept = listBreakpoints(buildForkedRequest(mixed, { runId: "r1", directive: "d" }).request);
    expect(kept.map((b) => [b.location.area, b.ttl])).toEqual([
      ["system", "1h"],
      ["messages", "5m"],
      ["messages", "5m"],
    ]);
  });

  it("applies model and max_tokens overrides in place, and a system reminder after the directive", () => {
    const prefix = fixturePrefix("4k");
    const forked = buildForkedRequest(prefix, {
      runId: "r1",
      directive: "d",
      model: "claude-haiku-4-5",
      maxTokens: 1000,
      systemReminder: "Never touch main.",
    });
    expect(Object.keys(forked.request).slice(0, 2)).toEqual(["model", "max_tokens"]);
    expect(forked.request.model).toBe("claude-haiku-4-5");
    expect(forked.request.max_tokens).toBe(1000);
    const last = forked.request.messages.at(-1)!.content as Block[];
    expect(forked.directive.blockIndex).toBe(last.length - 2);
    expect(last.at(-1)).toEqual({
      type: "text",
      text: "<system-reminder>\nNever touch main.\n</system-reminder>",
    });
    expect(last.findIndex((block) => "cache_control" in block)).toBeLessThan(forked.directive.blockIndex);
  });
});

describe("buildForkedRequest on other histories", () => {
  const base = (messages: MessageParam[]): CacheSafeParams => ({
    model: "claude-sonnet-4-5",
    max_tokens: 100,
    messages,
  });

  it("continues a prefilled assistant turn with the reply, as one turn", () => {
    const reply: AssistantMessage = { role: "assistant", content: [{ type: "text", text: " and done." }] };
    const prefix = createForkPrefix(
      base([
        { role: "user", content: "go" },
        { role: "assistant", content: "Started" },
      ]),
      reply,
    );
    const forked = buildForkedRequest(prefix, { runId: "r1", directive: "d" });
    expect(forked.request.messages).toHaveLength(3);
    expect(forked.request.messages[1]!.content).toEqual([
      { type: "text", text: "Started" },
      { type: "text", text: " and done.", cache_control: { type: "ephemeral" } },
    ]);
  });

  it("reports where it put the breakpoint", () => {
    const userTail = buildForkedRequest(createForkPrefix(base([{ role: "user", content: "go" }])), {
      runId: "r1",
      directive: "d",
    });
    expect(userTail.breakpoint).toEqual({ area: "messages", messageIndex: 0, blockIndex: 0 });
    const reply: AssistantMessage = {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: {} }],
    };
    const strict = buildForkedRequest(createForkPrefix(base([{ role: "user", content: "go" }]), reply), {
      runId: "r1",
      directive: "d",
      strictAlternation: true,
    });
    expect(strict.breakpoint).toEqual({ area: "messages", messageIndex: 3, blockIndex: 0 });
  });

  it("puts no breakpoint on an assistant tail that cannot carry one", () => {
    const prefix = createForkPrefix(
      base([
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "thinking", thinking: "hm", signature: "sig" }] },
      ]),
    );
    const forked = buildForkedRequest(prefix, { runId: "r1", directive: "d" });
    expect(forked.breakpoint).toBeNull();
    expect(listBreakpoints(forked.request)).toEqual([]);
  });

  it("answers tool calls with the placeholder text it is given", () => {
    const reply: AssistantMessage = {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: {} }],
    };
    const prefix = createForkPrefix(base([{ role: "user", content: "go" }]), reply);
    const forked = buildForkedRequest(prefix, { runId: "r1", directive: "d", placeholderText: "elsewhere" });
    expect((forked.request.messages[2]!.content as Block[])[0]).toMatchObject({
      tool_use_id: "toolu_1",
      content: "elsewhere",
    });
  });

  it("appends the directive to a user turn with nothing that can carry a breakpoint", () => {
    const prefix = createForkPrefix(base([{ role: "user", content: "" }]));
    const forked = buildForkedRequest(prefix, { runId: "r1", directive: "d" });
    const content = forked.request.messages[0]!.content as Block[];
    expect(content).toHaveLength(1);
    expect(parseDirectiveBlock(content[0]!.text as string)?.runId).toBe("r1");
  });

  it("keeps a dangling, incomplete tool_use of the reply and answers it", () => {
    const reply: AssistantMessage = {
      role: "assistant",
      content: [
        { type: "text", text: "Reading" },
        { type: "tool_use", id: "toolu_cut", name: "Read", input: {} },
      ],
    };
    const prefix = createForkPrefix(base([{ role: "user", content: "go" }]), reply);
    const forked = buildForkedRequest(prefix, { runId: "r1", directive: "d" });
    expect(forked.request.messages[1]!.content).toEqual(reply.content);
    expect((forked.request.messages[2]!.content as Block[])[0]).toMatchObject({
      tool_use_id: "toolu_cut",
      content: FORK_PLACEHOLDER_RESULT,
    });
    expect(findRequestProblems(forked.request)).toEqual([]);
  });

  it("keeps interrupted tool calls inside the history untouched", () => {
    const messages: MessageParam[] = [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_a", name: "Bash", input: { command: "sl" } }],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_a",
            content: "[Request interrupted by user]",
            is_error: true,
          },
        ],
      },
    ];
    const forked = buildForkedRequest(createForkPrefix(base(messages)), { runId: "r1", directive: "d" });
    expect(JSON.stringify(forked.request.messages.slice(0, 2))).toBe(JSON.stringify(messages.slice(0, 2)));
    expect(findRequestProblems(forked.request)).toEqual([]);
  });

  it("appends the directive after a reply without tool calls (a programmatic fork)", () => {
    const reply: AssistantMessage = {
      role: "assistant",
      content: [{ type: "text", text: "Done thinking." }],
    };
    const forked = buildForkedRequest(createForkPrefix(base([{ role: "user", content: "go" }]), reply), {
      runId: "r1",
      directive: "d",
    });
    expect(forked.shape).toBe("text_reply");
    expect(forked.request.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(forked.breakpoint).toEqual({ area: "messages", messageIndex: 1, blockIndex: 0 });
    expect((forked.request.messages[1]!.content as Block[])[0]!.cache_control).toEqual({ type: "ephemeral" });
    expect(findRequestProblems(forked.request)).toEqual([]);
  });

  it("merges the directive into a history ending on a user turn (string content included)", () => {
    const forked = buildForkedRequest(
      createForkPrefix(base([{ role: "user", content: "Summarise the repo." }])),
      {
        runId: "r1",
        directive: "d",
      },
    );
    expect(forked.shape).toBe("user_tail");
    expect(forked.request.messages).toHaveLength(1);
    const content = forked.request.messages[0]!.content as Block[];
    expect(content[0]).toEqual({
      type: "text",
      text: "Summarise the repo.",
      cache_control: { type: "ephemeral" },
    });
    expect(forked.directive).toEqual({ area: "messages", messageIndex: 0, blockIndex: 1 });
    expect(findRequestProblems(forked.request)).toEqual([]);
  });

  it("answers a history ending on an assistant turn like a reply", () => {
    const messages: MessageParam[] = [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_x", name: "Agent", input: { prompt: "p" } }],
      },
    ];
    const forked = buildForkedRequest(createForkPrefix(base(messages)), { runId: "r1", directive: "d" });
    expect(forked.shape).toBe("tool_use_reply");
    expect(findRequestProblems(forked.request)).toEqual([]);
    const plain: MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: "ok" },
    ];
    const fromText = buildForkedRequest(createForkPrefix(base(plain)), { runId: "r1", directive: "d" });
    expect(fromText.shape).toBe("assistant_tail");
    expect(findRequestProblems(fromText.request)).toEqual([]);
  });

  it("joins a reply to a prefilled assistant turn", () => {
    const messages: MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: "Here is" },
    ];
    const reply: AssistantMessage = { role: "assistant", content: [{ type: "text", text: " the plan." }] };
    const forked = buildForkedRequest(createForkPrefix(base(messages), reply), {
      runId: "r1",
      directive: "d",
    });
    expect(forked.request.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(findRequestProblems(forked.request)).toEqual([]);
  });

  it("starts from the directive alone when there is no history", () => {
    const forked = buildForkedRequest({ params: base([]) }, { runId: "r1", directive: "d" });
    expect(forked.shape).toBe("empty");
    expect(forked.breakpoint).toBeNull();
    expect(findRequestProblems(forked.request)).toEqual([]);
  });

  it("treats a reply with no content as no reply", () => {
    const forked = buildForkedRequest(
      createForkPrefix(base([{ role: "user", content: [{ type: "text", text: "hi" }] }]), {
        role: "assistant",
        content: [],
      }),
      { runId: "r1", directive: "d" },
    );
    expect(forked.shape).toBe("user_tail");
    expect(findRequestProblems(forked.request)).toEqual([]);
  });

  it("does not put a breakpoint on a thinking block", () => {
    const reply: AssistantMessage = {
      role: "assistant",
      content: [
        { type: "text", text: "Plan" },
        { type: "thinking", thinking: "hmm", signature: "sig" },
      ],
    };
    const forked = buildForkedRequest(createForkPrefix(base([{ role: "user", content: "go" }]), reply), {
      runId: "r1",
      directive: "d",
    });
    expect(forked.breakpoint).toEqual({ area: "messages", messageIndex: 1, blockIndex: 0 });
  });

  it("strict alternation: results alone, then the constant acknowledgement carrying the breakpoint", () => {
    const prefix = fixturePrefix("4k");
    const forked = buildForkedRequest(prefix, { runId: "r1", directive: "d", strictAlternation: true });
    const tail = forked.request.messages.slice(-3);
    expect(tail.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect((tail[0]!.content as Block[]).every((block) => block.type === "tool_result")).toBe(true);
    expect(tail[1]!.content).toEqual([
      { type: "text", text: FORK_ACKNOWLEDGEMENT, cache_control: { type: "ephemeral" } },
    ]);
    expect(tail[2]!.content).toHaveLength(1);
  });
});
