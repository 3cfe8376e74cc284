import { describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "./clock.js";
import { SimOptionsError } from "./errors.js";
import { resolveOptions } from "./options.js";

describe("resolveOptions", () => {
  it("applies the defaults", () => {
    expect(resolveOptions({})).toEqual({
      port: 0,
      host: "127.0.0.1",
      clock: systemClock,
      ttftMs: 0,
      tokensPerSecond: 0,
      maxBodyBytes: 32 * 1024 * 1024,
      faults: undefined,
    });
  });

  it("keeps what was given, and parses fault kinds written as in scripts", () => {
    const clock = new ManualClock();
    const settings = resolveOptions({
      port: 8080,
      host: "::1",
      clock,
      latency: { ttftMs: 250, tokensPerSecond: 40 },
      maxBodyBytes: 1024,
      faults: { rate: 0.5, seed: 7, kinds: ["529", { kind: "cut", afterTokens: 10 }] },
    });
    expect(settings).toMatchObject({
      port: 8080,
      host: "::1",
      ttftMs: 250,
      tokensPerSecond: 40,
      maxBodyBytes: 1024,
    });
    expect(settings.clock).toBe(clock);
    expect(settings.faults?.rate).toBe(0.5);
    expect(settings.faults?.seed).toBe(7);
    expect(settings.faults?.kinds?.map((k) => k.kind)).toEqual(["status", "cut"]);
  });

  it("names every problem of options that cannot work", () => {
    const error = (() => {
      try {
        resolveOptions({ port: -1, latency: { ttftMs: -5 } });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(SimOptionsError);
    expect((error as SimOptionsError).issues).toEqual([
      expect.stringMatching(/^port: /),
      expect.stringMatching(/^latency\.ttftMs: /),
    ]);
  });

  it("refuses a fault kind it cannot parse, with the parser's error as the cause", () => {
    expect(() => resolveOptions({ faults: { rate: 1, kinds: ["teapot"] } })).toThrow(
      expect.objectContaining({
        name: "SimOptionsError",
        message: expect.stringContaining("faults.kinds: "),
        cause: expect.any(Error),
      }),
    );
  });
});
