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
import type { NatsConnection } from "@nats-io/transport-node";

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
}

/** A running tool host. Pass {@link ToolHost.ref} as `toolHost` to {@link NatsForkSubagent}. */
export interface ToolHost {
  readonly ref: ToolHostRef;
  stop(): Promise<void>;
}

/** Serves `tools` on `agent.toolhost.<hostId>` until stopped. */
export function serveTools(nc: NatsConnection, options: ServeToolsOptions): ToolHost {
  const subject = forkSubjects(options.prefix ?? DEFAULT_SUBJECT_PREFIX).toolHost(options.hostId);
  const reply = (content: string, isError: boolean) =>
    toolHostResponseCodec.encode({ v: PROTOCOL_VERSION, content, is_error: isError });
  const subscription = nc.subscribe(subject, {
    ...(options.queue ? { queue: options.queue } : {}),
    callback: (error, message) => {
      if (error) return;
      void (async () => {
        let call: ToolHostRequest;
        try {
          call = toolHostRequestCodec.decode(message.data);
        } catch (decodeError) {
          message.respond(reply(`malformed tool call: ${(decodeError as Error).message}`, true));
          return;
        }
        const handler = Object.hasOwn(options.tools, call.name) ? options.tools[call.name] : undefined;
        if (!handler) {
          message.respond(reply(`tool ${call.name} is not served by host ${options.hostId}`, true));
          return;
        }
        try {
          const out = await handler(call.input, call);
          message.respond(
            typeof out === "string" ? reply(out, false) : reply(out.content, out.isError ?? false),
          );
        } catch (handlerError) {
          message.respond(
            reply(
              `tool ${call.name} failed: ${(handlerError as Error).message ?? String(handlerError)}`,
              true,
            ),
          );
        }
      })();
    },
  });
  return {
    ref: { id: options.hostId, tools: Object.keys(options.tools) },
    stop: async () => {
      await subscription.drain();
    },
  };
}
