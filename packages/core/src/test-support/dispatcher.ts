// Test-only: a small ToolDispatcher with tools whose behaviour the turn-loop tests need: an echo, a
// tool that ignores its abort signal, a real child process, and a tool that throws.
import { type ChildProcess, spawn } from "node:child_process";
import type { ToolCall, ToolDispatcher, ToolExecutionContext, ToolOutcome } from "../tool-dispatcher.js";

export interface TestDispatcher extends ToolDispatcher {
  readonly executed: ToolCall[];
  /** Resolves when a call of `name` starts running. */
  started(name: string): Promise<ToolExecutionContext>;
  /** The child process of the last `Shell` call. */
  child: ChildProcess | undefined;
}

export function testDispatcher(options: { safeToRepeat?: readonly string[] } = {}): TestDispatcher {
  const waiters = new Map<string, ((context: ToolExecutionContext) => void)[]>();
  const notify = (name: string, context: ToolExecutionContext) => {
    for (const resolve of waiters.get(name) ?? []) resolve(context);
    waiters.delete(name);
  };
  const dispatcher: TestDispatcher = {
    executed: [],
    child: undefined,
    started: (name) =>
      new Promise((resolve) => {
        waiters.set(name, [...(waiters.get(name) ?? []), resolve]);
      }),
    isSafeToRepeat: (call) => (options.safeToRepeat ?? []).includes(call.name),
    async execute(call, context): Promise<ToolOutcome> {
      dispatcher.executed.push(call);
      notify(call.name, context);
      switch (call.name) {
        case "Echo":
          return { content: JSON.stringify(call.input), isError: false };
        case "Fail":
          return { content: "it failed", isError: true };
        case "Throw":
          throw new Error("dispatcher bug");
        case "Stubborn":
          // Ignores its signal: only the loop's race can free the run.
          return new Promise<ToolOutcome>(() => {});
        case "Shell": {
          const child = spawn("sleep", ["30"], { signal: context.signal, stdio: "ignore" });
          dispatcher.child = child;
          return new Promise<ToolOutcome>((resolve) => {
            child.on("error", () => {});
            child.on("exit", (code, signal) =>
              resolve({ content: `exit ${code ?? signal}`, isError: code !== 0 }),
            );
          });
        }
        default:
          return { content: `ran ${call.name}`, isError: false };
      }
    },
  };
  return dispatcher;
}
