// Every package's errors are ForkdErrors (the CLI's: packages/cli/src/errors.test.ts), and any of them becomes a `failed` event's error through
// the one toWireError: its own code, message and retryability; anything else is `internal`.
import { ClientError } from "@forkd/client";
import { InvalidForkParamsError, LlmError, RecursionGuardError } from "@forkd/core";
import { DaemonConfigError, DaemonError } from "@forkd/daemon";
import { ForkdError, ProtocolError, toWireError, WireErrorSchema } from "@forkd/protocol";
import { ProxyUnavailableError, StreamAssemblyError } from "@forkd/proxy";
import { SimOptionsError } from "@forkd/sim";
import { WaitForTimeoutError } from "@forkd/testing";
import { describe, expect, it } from "vitest";

describe("the error hierarchy", () => {
  const errors: [ForkdError, { code: string; retryable: boolean }][] = [
    [
      new ProtocolError("invalid_spec", "bad spec", { path: ["directive"] }),
      { code: "invalid_spec", retryable: false },
    ],
    [new InvalidForkParamsError("directive", "empty"), { code: "invalid_fork_params", retryable: false }],
    [
      new RecursionGuardError("query_source", "a fork may not fork"),
      { code: "recursion_guard", retryable: false },
    ],
    [new LlmError("overloaded", "529", { retryable: true }), { code: "overloaded", retryable: true }],
    [new DaemonError("fenced", "claim lost", { retryable: true }), { code: "fenced", retryable: true }],
    [new DaemonConfigError("concurrency must be positive"), { code: "invalid_config", retryable: false }],
    [new ClientError("closed", "client closed"), { code: "closed", retryable: false }],
    [new SimOptionsError(["ttft must be ≥ 0"]), { code: "invalid_options", retryable: false }],
    [
      new WaitForTimeoutError("no answer", { timeoutMs: 10, attempts: 1 }),
      { code: "wait_for_timeout", retryable: false },
    ],
    [new StreamAssemblyError("unknown delta"), { code: "stream_unreadable", retryable: false }],
    [new ProxyUnavailableError("no answer"), { code: "proxy_unavailable", retryable: true }],
  ];

  it.each(errors.map(([error, expected]) => [error.name, error, expected] as const))(
    "%s is a ForkdError and goes to the wire as itself",
    (_name, error, expected) => {
      expect(error).toBeInstanceOf(ForkdError);
      expect(error).toBeInstanceOf(Error);
      const wire = toWireError(error);
      expect(wire).toMatchObject({ ...expected, message: error.message });
      expect(WireErrorSchema.parse(wire)).toEqual(wire);
    },
  );

  it("keeps a protocol error's path on the wire", () => {
    expect(toWireError(new ProtocolError("invalid_spec", "bad", { path: ["limits", 0] }))).toEqual({
      code: "invalid_spec",
      message: "bad",
      retryable: false,
      path: ["limits", 0],
    });
  });

  it("sends anything else as internal, never trusting a foreign `code`", () => {
    const foreign = Object.assign(new Error("ENOENT: no such file"), { code: "ENOENT", retryable: true });
    expect(toWireError(foreign)).toEqual({
      code: "internal",
      message: "ENOENT: no such file",
      retryable: false,
    });
    expect(toWireError("a string")).toEqual({ code: "internal", message: "a string", retryable: false });
  });
});
