// The CLI's errors are ForkdErrors like every package's, so one conversion sends them to the wire.
import { ForkdError, toWireError } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { CliError, NatsUnavailableError, UsageError } from "./errors.js";
import { InterruptedError } from "./interrupt.js";

describe("CLI errors", () => {
  it("are ForkdErrors with their own codes", () => {
    const errors = [
      new UsageError("--children: not a number"),
      new CliError("not_found", "no run"),
      new InterruptedError("SIGINT"),
    ];
    for (const error of errors) expect(error).toBeInstanceOf(ForkdError);
    expect(errors.map((error) => toWireError(error).code)).toEqual(["usage", "not_found", "interrupted"]);
    expect(NatsUnavailableError.prototype).toBeInstanceOf(ForkdError);
  });
});
