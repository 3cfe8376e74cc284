import type { CacheSafeParams } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import {
  automaticBreakpoint,
  type BlockLocation,
  canCarryBreakpoint,
  lastBreakpointCandidate,
  listBreakpoints,
  placeBreakpoint,
} from "./breakpoints.js";

type Request = Pick<CacheSafeParams, "tools" | "system" | "messages">;
type Ttl = "5m" | "1h";

const marker = (ttl: Ttl) => (ttl === "1h" ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" });
const text = (t: string, ttl?: Ttl) => ({
  type: "text",
  text: t,
  ...(ttl ? { cache_control: marker(ttl) } : {}),
});
const tool = (name: string, ttl?: Ttl) => ({
  name,
  input_schema: { type: "object" },
  ...(ttl ? { cache_control: marker(ttl) } : {}),
});

/** A request whose only user message holds `blocks`; `tools` and `system` as given. */
function request(blocks: unknown[], extra: Partial<Request> = {}): Request {
  return { ...extra, messages: [{ role: "user", content: blocks }] } as Request;
}

const at = (blockIndex: number, messageIndex = 0) => ({
  area: "messages" as const,
  messageIndex,
  blockIndex,
});
const where = (r: Request) => listBreakpoints(r).map((b) => ({ ...b.location, ttl: b.ttl }));

describe("canCarryBreakpoint", () => {
  it("accepts content blocks but not thinking, empty text or what is not a block", () => {
    for (const block of [
      text("x"),
      { type: "image", source: {} },
      { type: "tool_result", tool_use_id: "t" },
    ]) {
      expect(canCarryBreakpoint(block), JSON.stringify(block)).toBe(true);
    }
    for (const block of [
      null,
      "text",
      [],
      [{ type: "text", text: "x" }],
      { type: 3 },
      { text: "x" },
      { type: "thinking", thinking: "x" },
      { type: "redacted_thinking", data: "x" },
      { type: "text", text: "" },
      { type: "text" },
      { type: "text", text: 5 },
    ]) {
      expect(canCarryBreakpoint(block), JSON.stringify(block)).toBe(false);
    }
  });
});

describe("lastBreakpointCandidate", () => {
  it("finds the last block that can carry one, before `end`, or -1", () => {
    const content = [text("a"), { type: "thinking", thinking: "x" }, text("b"), text("")];
    expect(lastBreakpointCandidate(content)).toBe(2);
    expect(lastBreakpointCandidate(content, 2)).toBe(0);
    expect(lastBreakpointCandidate(content, 99)).toBe(2);
    expect(lastBreakpointCandidate([{ type: "thinking", thinking: "x" }, text("")])).toBe(-1);
    expect(lastBreakpointCandidate([])).toBe(-1);
  });
});

describe("listBreakpoints", () => {
  it("lists markers in prefix order with their TTL, and ignores a null marker", () => {
    const r = request([text("a", "1h"), { ...text("b"), cache_control: null }, text("c")], {
      tools: [tool("t0"), tool("t1", "1h")],
      system: [text("s0", "5m")],
    } as Partial<Request>);
    expect(where(r)).toEqual([
      { area: "tools", index: 1, ttl: "1h" },
      { area: "system", index: 0, ttl: "5m" },
      { area: "messages", messageIndex: 0, blockIndex: 0, ttl: "1h" },
    ]);
  });
});

describe("placeBreakpoint", () => {
  it("refuses a place that cannot carry a marker", () => {
    const r = request([text("a"), { type: "thinking", thinking: "x" }]);
    expect(() => placeBreakpoint(r, at(1))).toThrow(
      new RangeError("no block at messages[0].content[1] can carry a breakpoint"),
    );
    expect(() => placeBreakpoint(r, at(0, 5))).toThrow(RangeError);
    expect(() => placeBreakpoint(r, at(3))).toThrow(RangeError);
    const plain = { messages: [{ role: "user", content: "a string" }] } as Request;
    expect(() => placeBreakpoint(plain, at(0))).toThrow(RangeError);
  });

  it("puts a 5m marker by default and a 1h one when asked", () => {
    const r = request([text("a"), text("b")]);
    placeBreakpoint(r, at(0), { ttl: "1h" });
    placeBreakpoint(r, at(1));
    expect(r.messages[0]!.content).toEqual([
      { type: "text", text: "a", cache_control: { type: "ephemeral", ttl: "1h" } },
      { type: "text", text: "b", cache_control: { type: "ephemeral" } },
    ]);
  });

  it("keeps a marker already in place with its own TTL", () => {
    const r = request([text("a", "1h")]);
    expect(placeBreakpoint(r, at(0))).toEqual([{ location: at(0), ttl: "1h" }]);
    expect(r.messages[0]!.content).toEqual([text("a", "1h")]);
  });

  it("drops a 5m marker followed by a 1h one, keeps the others", () => {
    const r = request([text("a", "5m"), text("b", "1h"), text("c", "5m"), text("d")]);
    placeBreakpoint(r, at(3));
    expect(where(r)).toEqual([
      { ...at(1), ttl: "1h" },
      { ...at(2), ttl: "5m" },
      { ...at(3), ttl: "5m" },
    ]);
  });

  it("keeps 1h markers followed by 1h markers", () => {
    const r = request([text("a", "1h"), text("b", "1h"), text("c")]);
    placeBreakpoint(r, at(2), { ttl: "1h" });
    expect(where(r).map((b) => b.ttl)).toEqual(["1h", "1h", "1h"]);
  });

  it("never drops the new marker, even when a 1h marker follows it", () => {
    const r = request([text("a"), text("b", "1h")]);
    placeBreakpoint(r, at(0));
    expect(where(r)).toEqual([
      { ...at(0), ttl: "5m" },
      { ...at(1), ttl: "1h" },
    ]);
  });

  it("drops the earliest unprotected markers past four, in any area", () => {
    const make = () =>
      request([text("m0", "5m"), text("m1", "5m"), text("m2")], {
        tools: [tool("t0", "5m")],
        system: [text("s0", "5m"), text("s1")],
      } as Partial<Request>);
    const placed = (protect: BlockLocation[]) => {
      const r = make();
      placeBreakpoint(r, at(2), { protect });
      return where(r).map(({ ttl: _ttl, ...location }) => location);
    };
    expect(placed([])).toEqual([{ area: "system", index: 0 }, at(0), at(1), at(2)]);
    expect(placed([{ area: "tools", index: 0 }])).toEqual([{ area: "tools", index: 0 }, at(0), at(1), at(2)]);
    // A protected place holds only its own marker: same area, other index (or other message) is not it.
    expect(placed([{ area: "tools", index: 1 }])).toEqual([
      { area: "system", index: 0 },
      at(0),
      at(1),
      at(2),
    ]);
    expect(placed([{ area: "system", index: 0 }])).toEqual([
      { area: "system", index: 0 },
      at(0),
      at(1),
      at(2),
    ]);
    expect(
      placed([
        { area: "tools", index: 0 },
        { area: "system", index: 1 },
      ]),
    ).toEqual([{ area: "tools", index: 0 }, at(0), at(1), at(2)]);
  });

  it("tells message places apart by message and by block", () => {
    const r = {
      messages: [
        { role: "user", content: [text("a", "5m"), text("b", "5m")] },
        { role: "assistant", content: [text("c", "5m"), text("d", "5m")] },
        { role: "user", content: [text("e")] },
      ],
    } as Request;
    // Protecting messages[1].content[0] keeps it, not messages[0].content[0] (same block index) nor
    // messages[1].content[1] (same message).
    placeBreakpoint(r, at(0, 2), { protect: [at(0, 1)] });
    expect(where(r).map(({ ttl: _ttl, ...location }) => location)).toEqual([
      at(1, 0),
      at(0, 1),
      at(1, 1),
      at(0, 2),
    ]);
  });

  it("counts a top-level cache_control as the breakpoint on the last block, unless that block has a marker", () => {
    // Three markers of the parent, the fork's on m2, and the directive after it: automatic caching puts
    // a fifth breakpoint on the directive, so the earliest marker goes.
    const make = (top: unknown) =>
      ({
        ...request([text("m0", "5m"), text("m1", "5m"), text("m2"), text("directive")], {
          system: [text("s0", "5m")],
        } as Partial<Request>),
        cache_control: top,
      }) as Request;
    const placed = (r: Request, index: number) => {
      placeBreakpoint(r, at(index));
      return where(r).map(({ ttl: _ttl, ...location }) => location);
    };
    expect(placed(make({ type: "ephemeral" }), 2)).toEqual([at(0), at(1), at(2)]);
    // Just inside: on the last block the automatic breakpoint is the marker itself, so four stay.
    expect(placed(make({ type: "ephemeral" }), 3)).toEqual([
      { area: "system", index: 0 },
      at(0),
      at(1),
      at(3),
    ]);
    // Without a top-level marker (or with a null one) nothing more is dropped.
    expect(placed(make(undefined), 2)).toEqual([{ area: "system", index: 0 }, at(0), at(1), at(2)]);
    expect(placed(make(null), 2)).toEqual([{ area: "system", index: 0 }, at(0), at(1), at(2)]);
    // A 1h automatic breakpoint comes after every marker: the 5m ones it follows go, and the placed one
    // is 1h too (5m on the last block, where the automatic breakpoint is that marker).
    const hour = make({ type: "ephemeral", ttl: "1h" });
    placeBreakpoint(hour, at(2));
    expect(where(hour)).toEqual([{ ...at(2), ttl: "1h" }]);
    const last = make({ type: "ephemeral", ttl: "1h" });
    placeBreakpoint(last, at(3));
    expect(where(last).map((b) => b.ttl)).toEqual(["5m", "5m", "5m", "5m"]);
    // A 5m marker after the placed one is followed by the 1h automatic breakpoint alone: it goes too.
    const later = {
      ...request([text("a"), text("b", "5m"), text("c")]),
      cache_control: marker("1h"),
    } as Request;
    placeBreakpoint(later, at(0));
    expect(where(later)).toEqual([{ ...at(0), ttl: "1h" }]);
  });

  it("finds the automatic breakpoint past thinking blocks, on a string content, or in system and tools", () => {
    const top = { cache_control: { type: "ephemeral" } };
    const thinking = { type: "thinking", thinking: "t", signature: "s" };
    const messages = (...contents: unknown[]) =>
      contents.map((content, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content }));
    const find = (r: object) => automaticBreakpoint(r as Request)?.location;
    expect(find({ ...top, messages: messages("hi", [text("a"), thinking]) })).toEqual(at(0, 1));
    expect(find({ ...top, messages: messages("hi", [thinking]) })).toEqual(at(0, 0));
    expect(find({ ...top, messages: messages("", [thinking]), system: [text("s")] })).toEqual({
      area: "system",
      index: 0,
    });
    expect(find({ ...top, messages: [], tools: [tool("a"), tool("b")] })).toEqual({
      area: "tools",
      index: 1,
    });
    expect(find({ ...top, messages: [] })).toBeUndefined();
    // An empty string content is no block; an empty system is no place either.
    expect(find({ ...top, messages: messages("hi", "") })).toEqual(at(0, 0));
    expect(find({ ...top, messages: [], system: [], tools: [tool("a")] })).toEqual({
      area: "tools",
      index: 0,
    });
    expect(automaticBreakpoint({ messages: messages("hi") } as Request)).toBeNull();
    expect(
      automaticBreakpoint({
        cache_control: { type: "ephemeral", ttl: "1h" },
        messages: messages("hi"),
      } as Request)?.ttl,
    ).toBe("1h");
  });

  it("keeps every marker when all are protected, even past four", () => {
    const blocks = [text("a", "5m"), text("b", "5m"), text("c", "5m"), text("d", "5m"), text("e")];
    const r = request(blocks);
    const kept = placeBreakpoint(r, at(4), { protect: [0, 1, 2, 3].map((i) => at(i)) });
    expect(kept).toHaveLength(5);
  });

  it("copies what it changes, leaving shared objects as they were", () => {
    const system = [text("s0", "5m"), text("s1")];
    const tools = [tool("t0", "5m"), tool("t1")];
    const message = { role: "user", content: [text("a", "5m"), text("b", "5m"), text("c", "5m"), text("d")] };
    const before = JSON.stringify({ system, tools, message });
    const r = { system, tools, messages: [message] } as Request;
    placeBreakpoint(r, at(3));
    expect(JSON.stringify({ system, tools, message })).toBe(before);
    // Six markers: the tool's and the system block's, the earliest, were dropped from copies that
    // hold everything else.
    expect(r.tools).toEqual([{ name: "t0", input_schema: { type: "object" } }, tool("t1")]);
    expect(r.system).toEqual([text("s0"), text("s1")]);
  });
});
