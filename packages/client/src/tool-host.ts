// A process (typically the parent) serves tools over NATS, so a remote fork can call tools that
// exist only where the parent runs. Daemons route calls to `agent.toolhost.<id>` with request/reply.

import {
  DEFAULT_SUBJECT_PREFIX,
  forkSubjects,
  PROTOCOL_VERSION,
  type ToolHostRef,
  type ToolHostRequest,
  toolHostRequestCodec,
  toolHostResponseCodec,
} from "@forkd/protocol";
import { newSecret, proofMatches, toolHostCallProof, toolHostProof } from "@forkd/protocol/internal";
import type { Msg, NatsConnection } from "@nats-io/transport-node";

/** Runs one tool for a remote fork. Throwing is reported to the model as an error result. */
export type ToolHandler = (
  input: unknown,
  call: ToolHostRequest,
) =>
  | Promise<string | { content: string; isError?: boolean }>
  | string
  | { content: string; isError?: boolean };

/** Options of {@link serveTools}. */
export interface ServeToolsOptions {
  /** Unique id of this host; forks reach it on `agent.toolhost.<id>`. */
  hostId: string;
  tools: Record<string, ToolHandler>;
  /** @default "agent" */
  prefix?: string;
  /** Several processes with the same host id share the load (queue group). */
  queue?: string;
  /**
   * The host's reply key (64 hex characters). It travels in `ref` inside specs, which only daemons
   * read, and every reply carries a proof made with it, so a daemon believes no other responder on the
   * host's subject. Processes sharing one host id (a queue group) must share it.
   * @default a new random key
   */
  replyKey?: string;
}

/** A running tool host. Pass {@link ToolHost.ref} as `toolHost` to {@link NatsForkSubagent}. */
export interface ToolHost {
  readonly ref: ToolHostRef;
  stop(): Promise<void>;
}

/**
 * How many calls a host remembers having taken, to refuse one sent again. A daemon never sends a call
 * twice (a tool call has effects), so a repeat is someone replaying what they saw on the subject.
 */
export const MAX_REMEMBERED_TOOL_CALLS = 4_096;

/** Serves `tools` on `agent.toolhost.<hostId>` until stopped. */
export function serveTools(nc: NatsConnection, options: ServeToolsOptions): ToolHost {
  const subject = forkSubjects(options.prefix ?? DEFAULT_SUBJECT_PREFIX).toolHost(options.hostId);
  const replyKey = options.replyKey ?? newSecret();
  // Every parent may watch the subject and see each call with its proof; sent again by anyone who may
  // publish there (only daemons, under the deployed permissions), it would pass the proof and run the
  // tool a second time. Kept per process: the members of a queue group do not share it.
  const taken = new Set<string>();
  const proofOf = (call: ToolHostRequest | undefined) =>
    call ? { proof: toolHostProof(replyKey, call) } : {};
  const respond = (message: Msg, call: ToolHostRequest | undefined, content: string, isError: boolean) =>
    message.respond(
      toolHostResponseCodec.encode({ v: PROTOCOL_VERSION, content, is_error: isError, ...proofOf(call) }),
    );
  const subscription = nc.subscribe(subject, {
    ...(options.queue ? { queue: options.queue } : {}),
    callback: (error, message) => {
      if (error) return;
      void (async () => {
        let call: ToolHostRequest;
        try {
          call = toolHostRequestCodec.decode(message.data);
        } catch (decodeError) {
          respond(message, undefined, `malformed tool call: ${(decodeError as Error).message}`, true);
          return;
        }
        // A call of a run whose spec did not carry this host's reply key: another parent's run that
        // named this host's id (seen on the wire). Refused before any tool runs, and answered without a
        // proof, so a daemon waiting for this host's word does not take it for one.
        if (!proofMatches(toolHostCallProof(replyKey, call), call.proof)) {
          respond(message, undefined, `tool host ${options.hostId} serves only its own parent's runs`, true);
          return;
        }
        const callKey = `${call.run_id}\n${call.tool_use_id}`;
        if (taken.has(callKey)) {
          respond(
            message,
            undefined,
            `tool call ${call.tool_use_id} was already taken; a call runs once`,
            true,
          );
          return;
        }
        taken.add(callKey);
        if (taken.size > MAX_REMEMBERED_TOOL_CALLS) taken.delete(taken.values().next().value!);
        const handler = Object.hasOwn(options.tools, call.name) ? options.tools[call.name] : undefined;
        if (!handler) {
          respond(message, call, `tool ${call.name} is not served by host ${options.hostId}`, true);
          return;
        }
        try {
          const out = await handler(call.input, call);
          if (typeof out === "string") respond(message, call, out, false);
          else respond(message, call, out.content, out.isError ?? false);
        } catch (handlerError) {
          const text = (handlerError as Error).message ?? String(handlerError);
          respond(message, call, `tool ${call.name} failed: ${text}`, true);
        }
      })();
    },
  });
  return {
    ref: { id: options.hostId, tools: Object.keys(options.tools), reply_key: replyKey },
    stop: async () => {
      await subscription.drain();
    },
  };
}
