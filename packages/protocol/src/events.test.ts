// The list of event types stays in step with the schema.
import { describe, expect, it } from "vitest";
import {
  FORK_EVENT_TYPES,
  ForkEventSchema,
  isForkEventType,
  isTerminalEvent,
  TERMINAL_EVENT_TYPES,
} from "./events.js";

describe("FORK_EVENT_TYPES", () => {
  it("lists exactly the members of ForkEventSchema", () => {
    const members = ForkEventSchema.options.map((schema) => schema.shape.type.value);
    expect([...FORK_EVENT_TYPES].sort()).toEqual([...members].sort());
    expect(new Set(FORK_EVENT_TYPES).size).toBe(FORK_EVENT_TYPES.length);
  });

  it("includes the terminal types", () => {
    for (const type of TERMINAL_EVENT_TYPES) expect(isForkEventType(type)).toBe(true);
  });

  it("isForkEventType refuses anything else", () => {
    for (const value of ["llm", "tool.call ", "", undefined, 1, "Accepted"])
      expect(isForkEventType(value)).toBe(false);
  });

  it("isTerminalEvent is true for completed, failed and aborted only", () => {
    const terminal = FORK_EVENT_TYPES.filter((type) => isTerminalEvent({ type } as never));
    expect(terminal).toEqual(["completed", "failed", "aborted"]);
  });
});
