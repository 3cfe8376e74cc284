// OpenTelemetry spans of a run, continued from the parent's trace: the parent's W3C trace context
// travels in the spec (and the `traceparent` NATS header), and the run's span and its turn and tool
// spans are children of the parent's fork span. A no-op unless the process installs an OTel SDK.

import type { ForkEventBody, ForkSpec } from "@forkd/protocol";
import {
  type Context,
  createTraceState,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";

const tracer = trace.getTracer("@forkd/daemon");

/** Spans of one run attempt, driven by the run's own events. */
export interface RunTracing {
  /** Feeds an event: `llm.request` opens a turn span, `llm.message` closes it; likewise tools. */
  observe(event: ForkEventBody): void;
  /** Ends every open span; `outcome` is the run's terminal event type, or why this attempt stopped. */
  end(outcome: string, error?: string): void;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The parent's context from the spec's W3C `traceparent`, else from the spec message's header. */
export function parentTraceContext(spec: ForkSpec, headerTraceparent: string | undefined): Context {
  const match = TRACEPARENT.exec(spec.trace?.traceparent ?? headerTraceparent ?? "");
  if (!match) return ROOT_CONTEXT;
  const spanContext: SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  if (spec.trace?.tracestate) spanContext.traceState = createTraceState(spec.trace.tracestate);
  return isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

/** Starts the run span `forkd.run` under the parent's context. */
export function startRunTracing(
  spec: ForkSpec,
  options: { attempt: number; daemonId: string; headerTraceparent?: string | undefined },
): RunTracing {
  const parent = parentTraceContext(spec, options.headerTraceparent);
  const runSpan = tracer.startSpan(
    "forkd.run",
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "forkd.run_id": spec.run_id,
        "forkd.attempt": options.attempt,
        "forkd.daemon_id": options.daemonId,
        "forkd.parent.agent_id": spec.parent.agent_id,
        ...(spec.label ? { "forkd.label": spec.label } : {}),
      },
    },
    parent,
  );
  const runContext = trace.setSpan(parent, runSpan);
  const turns = new Map<number, Span>();
  const tools = new Map<string, Span>();
  return {
    observe(event) {
      switch (event.type) {
        case "llm.request":
          turns.set(
            event.turn,
            tracer.startSpan(
              "forkd.llm.turn",
              {
                kind: SpanKind.CLIENT,
                attributes: { "forkd.turn": event.turn, "gen_ai.request.model": event.model },
              },
              runContext,
            ),
          );
          break;
        case "llm.message": {
          const span = turns.get(event.turn);
          if (!span) break;
          span.setAttributes({
            "gen_ai.usage.input_tokens": event.usage.input_tokens,
            "gen_ai.usage.output_tokens": event.usage.output_tokens,
            "forkd.cache_read_tokens": event.usage.cache_read_input_tokens ?? 0,
            "forkd.cache_write_tokens": event.usage.cache_creation_input_tokens ?? 0,
          });
          span.end();
          turns.delete(event.turn);
          break;
        }
        case "tool.call":
          tools.set(
            event.tool_use_id,
            tracer.startSpan(
              "forkd.tool",
              { attributes: { "forkd.tool.name": event.name, "forkd.turn": event.turn } },
              runContext,
            ),
          );
          break;
        case "tool.result":
        case "tool.denied": {
          const span = tools.get(event.tool_use_id);
          if (!span) break;
          if (event.type === "tool.denied" || event.is_error) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
          tools.delete(event.tool_use_id);
          break;
        }
        case "cache.break":
          runSpan.addEvent("forkd.cache.break", { "forkd.layer": event.layer });
          break;
        default:
          break;
      }
    },
    end(outcome, error) {
      for (const span of [...turns.values(), ...tools.values()]) span.end();
      runSpan.setAttribute("forkd.outcome", outcome);
      if (error) runSpan.setStatus({ code: SpanStatusCode.ERROR, message: error });
      runSpan.end();
    },
  };
}
