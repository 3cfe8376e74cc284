// The walk for values JavaScript rewrites costs ~1.3 ms at 48k tokens: a JavaScript client's request,
// nearly every request forkd sees, must not pay it. Counted on the protocol's walk itself.
import { valuesJsonCannotKeep } from "@forkd/protocol/internal";
import { describe, expect, it, vi } from "vitest";
import { verbatimValuesOf } from "./verbatim-values.js";

vi.mock("@forkd/protocol/internal", async (importOriginal) => {
  const original = await importOriginal<typeof import("@forkd/protocol/internal")>();
  return { ...original, valuesJsonCannotKeep: vi.fn(original.valuesJsonCannotKeep) };
});

describe("verbatimValuesOf's cost", () => {
  it("walks a request only when a JavaScript reading would rewrite something in its text", () => {
    const walk = vi.mocked(valuesJsonCannotKeep);
    const request = { model: "m", tools: [{ name: "t", input_schema: { default: 1 } }], messages: [] };
    expect(verbatimValuesOf(request, JSON.stringify(request))).toEqual([]);
    expect(verbatimValuesOf(request, JSON.stringify(request, null, 2))).toEqual([]);
    expect(walk).not.toHaveBeenCalled();
    const sent = '{"model":"m","tools":[{"name":"t","input_schema":{"default":1.0}}],"messages":[]}';
    expect(verbatimValuesOf(request, sent)).toEqual([
      { at: ["tools", 0, "input_schema"], text: '{"default":1.0}' },
    ]);
    expect(walk).toHaveBeenCalledTimes(1);
  });
});
