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
  type PermissionRequest,
  PROTOCOL_VERSION,
  permissionRequestCodec,
  permissionResponseCodec,
  type ToolHostRef,
  toolHostRequestCodec,
  toolHostResponseCodec,
} from "@forkd/protocol";
import { permissionProof, proofMatches, toolHostCallProof, toolHostProof } from "@forkd/protocol/internal";
import { type NatsConnection, NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
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
      const message = {
        v: PROTOCOL_VERSION,
        run_id: context.runId,
        tool_use_id: call.id,
        name: call.name,
        input: call.input,
      } as const;
      // The host runs a call only with this proof: its id is on the wire, its reply key only in its
      // own parent's specs, so no other parent's run can have its tools called.
      const request = toolHostRequestCodec.encode(
        host.reply_key === undefined
          ? message
          : { ...message, proof: toolHostCallProof(host.reply_key, message) },
      );
      // With a reply key, only the host that holds it can answer: another responder on the subject
      // (any parent of the account may subscribe) is not believed, and cannot hide the real answer.
      const expected = host.reply_key === undefined ? undefined : toolHostProof(host.reply_key, message);
      try {
        const response = await requestVerified(
          nc,
          subjects.toolHost(host.id),
          request,
          { timeoutMs: TOOL_HOST_TIMEOUT_MS, signal: context.signal },
          (data) => {
            const reply = toolHostResponseCodec.decode(data);
            return expected === undefined || proofMatches(expected, reply.proof) ? reply : undefined;
          },
        );
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
  /** The spec's `owner_token`: when set, only answers with its proof count. */
  ownerToken?: string | undefined;
}): PermissionAsker | undefined {
  const { nc, subjects, runId, policy, dispatcher, ownerToken } = options;
  if (policy.mode === "allow") return undefined;
  return {
    needsApproval: (call) => !dispatcher.isSafeToRepeat(call),
    async ask(call, { signal, timeoutMs }): Promise<PermissionDecision> {
      if (policy.mode === "deny")
        return { decision: "deny", reason: "the run's permission policy denies tools that change anything" };
      const message: PermissionRequest = {
        v: PROTOCOL_VERSION,
        run_id: runId,
        tool_use_id: call.id,
        name: call.name,
        input: call.input,
        requested_at: Date.now(),
      };
      const request = permissionRequestCodec.encode(message);
      const expected = ownerToken === undefined ? undefined : permissionProof(ownerToken, message);
      try {
        const response = await requestVerified(
          nc,
          subjects.permission(runId),
          request,
          { timeoutMs, signal },
          (data) => {
            const reply = permissionResponseCodec.decode(data);
            return expected === undefined || proofMatches(expected, reply.proof) ? reply : undefined;
          },
        );
        return response.decision === "allow"
          ? { decision: "allow" }
          : { decision: "deny", reason: response.reason ?? "the parent denied this tool call" };
      } catch (error) {
        signal.throwIfAborted();
        const text = String((error as Error).message ?? error);
        if (error instanceof TimeoutError)
          return { decision: "timeout", reason: `no answer from the parent within ${timeoutMs} ms` };
        if (error instanceof NoRespondersError || (error instanceof RequestError && error.isNoResponders())) {
          // Nobody listens yet: wait out the timeout as a deny, the parent may be between subscriptions.
          return { decision: "timeout", reason: "no parent is listening for permission requests" };
        }
        return { decision: "deny", reason: `permission request failed: ${text}` };
      }
    },
  };
}

/**
 * Sends one request and waits for the first reply `accept` takes (it returns undefined for a reply
 * to ignore, and may throw for a malformed one, which is ignored too), until `timeoutMs`. Unlike a
 * plain request, a hostile responder that answers first cannot hide the real answer.
 * Throws `TimeoutError` when none was accepted in time, `NoRespondersError` when nobody listens.
 */
async function requestVerified<T>(
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  options: { timeoutMs: number; signal: AbortSignal },
  accept: (data: Uint8Array) => T | undefined,
): Promise<T> {
  const replies = await nc.requestMany(subject, data, { strategy: "timer", maxWait: options.timeoutMs });
  const iterator = replies[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await raceSignal(iterator.next(), options.signal);
      if (next.done) break;
      try {
        const accepted = accept(next.value.data);
        if (accepted !== undefined) return accepted;
      } catch {
        // a malformed reply: keep waiting for the real one
      }
    }
  } finally {
    await iterator.return?.();
  }
  throw new TimeoutError();
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
