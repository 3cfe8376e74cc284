// Tools that exist only where the parent runs, reached over NATS request/reply, and the parent's
// approval of tool calls under an `ask` policy (permission bubbling).

import type {
  PermissionAsker,
  PermissionDecision,
  ToolCall,
  ToolDispatcher,
  ToolExecutionContext,
  ToolOutcome,
} from "@forkd/core";
import {
  type ForkSubjects,
  type PermissionPolicy,
  PROTOCOL_VERSION,
  permissionRequestCodec,
  permissionResponseCodec,
  type ToolHostRef,
  toolHostRequestCodec,
  toolHostResponseCodec,
} from "@forkd/protocol";
import type { NatsConnection } from "@nats-io/transport-node";
import { capOutput } from "./tools/output.js";

/** How long a tool host may take to answer one call. @unit ms */
const TOOL_HOST_TIMEOUT_MS = 120_000;

/**
 * Routes calls of the tools a tool host serves to it; anything else is an error the model can handle.
 * A reply is capped like a built-in tool's output (`options.outputCapBytes`), so a tool host cannot
 * make a `tool.result` event too large to publish.
 */
export function toolHostDispatcher(
  nc: NatsConnection,
  subjects: ForkSubjects,
  host: ToolHostRef | undefined,
  options: { outputCapBytes: number },
): ToolDispatcher {
  const served = new Set(host?.tools ?? []);
  return {
    isSafeToRepeat: () => false,
    async execute(call: ToolCall, context: ToolExecutionContext): Promise<ToolOutcome> {
      if (!host || !served.has(call.name)) {
        return {
          isError: true,
          content: `Tool ${call.name} is not available to this fork. Use the tools you have.`,
        };
      }
      const request = toolHostRequestCodec.encode({
        v: PROTOCOL_VERSION,
        run_id: context.runId,
        tool_use_id: call.id,
        name: call.name,
        input: call.input,
      });
      try {
        const reply = await raceSignal(
          nc.request(subjects.toolHost(host.id), request, { timeout: TOOL_HOST_TIMEOUT_MS }),
          context.signal,
        );
        const response = toolHostResponseCodec.decode(reply.data);
        return { content: capOutput(response.content, options.outputCapBytes), isError: response.is_error };
      } catch (error) {
        if (context.signal.aborted) return { isError: true, content: "aborted" };
        return {
          isError: true,
          content: `Tool ${call.name} is served by the parent's tool host ${host.id}, which did not answer: ${(error as Error).message}`,
        };
      }
    },
  };
}

/**
 * Under `ask`, calls that may change something (those the dispatcher does not call safe to repeat)
 * are sent to the parent on `agent.fork.<run_id>.permission`; no answer in time is a deny. Under
 * `deny` they are refused without asking.
 */
export function natsPermissionAsker(options: {
  nc: NatsConnection;
  subjects: ForkSubjects;
  runId: string;
  policy: PermissionPolicy;
  dispatcher: ToolDispatcher;
}): PermissionAsker | undefined {
  const { nc, subjects, runId, policy, dispatcher } = options;
  if (policy.mode === "allow") return undefined;
  return {
    needsApproval: (call) => !dispatcher.isSafeToRepeat(call),
    async ask(call, { signal, timeoutMs }): Promise<PermissionDecision> {
      if (policy.mode === "deny")
        return { decision: "deny", reason: "the run's permission policy denies tools that change anything" };
      const request = permissionRequestCodec.encode({
        v: PROTOCOL_VERSION,
        run_id: runId,
        tool_use_id: call.id,
        name: call.name,
        input: call.input,
        requested_at: Date.now(),
      });
      try {
        const reply = await raceSignal(
          nc.request(subjects.permission(runId), request, { timeout: timeoutMs }),
          signal,
        );
        const response = permissionResponseCodec.decode(reply.data);
        return response.decision === "allow"
          ? { decision: "allow" }
          : { decision: "deny", reason: response.reason ?? "the parent denied this tool call" };
      } catch (error) {
        signal.throwIfAborted();
        const text = String((error as Error).message ?? error);
        if (/timeout/i.test(text))
          return { decision: "timeout", reason: `no answer from the parent within ${timeoutMs} ms` };
        if (/503|no responders/i.test(text)) {
          // Nobody listens yet: wait out the timeout as a deny, the parent may be between subscriptions.
          return { decision: "timeout", reason: "no parent is listening for permission requests" };
        }
        return { decision: "deny", reason: `permission request failed: ${text}` };
      }
    },
  };
}

function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
