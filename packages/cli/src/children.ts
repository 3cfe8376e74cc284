// Follows the children of one fan-out to their ends and shows their progress: a live line per child on
// a terminal, one line per event otherwise, or NDJSON. Shared by `forkd fork` and `forkd demo`.

import type { FanOutChild, NatsForkHandle } from "@forkd/client";
import { type ForkOutcome, renderTaskNotification, taskNotificationFromOutcome } from "@forkd/core";
import { forkOutcomeFromTerminalEvent } from "@forkd/core/internal";
import {
  emptyUsageTotals,
  type ForkCall,
  type ForkEvent,
  isTerminalEvent,
  type UsageTotals,
} from "@forkd/protocol";
import { oneLine, renderTable } from "./format.js";
import { colourStatus, type OutputStream, type Style, writeLine } from "./io.js";
import { LiveView } from "./live-view.js";
import type { ParentTurn } from "./parent-turn.js";
import { eventLine, RunTracker, rowCells } from "./run-tracker.js";

/** One child of a fan-out. */
export interface Child {
  /** 1-based position in the fan-out. */
  index: number;
  label: string;
  forkCall: ForkCall | undefined;
  handle: NatsForkHandle;
}

/** How a child ended, and everything it published. */
export interface ChildResult {
  child: Child;
  /** `failed` with code `launch_failed` when its spec could not be published or its log not read. */
  outcome: ForkOutcome;
  events: ForkEvent[];
}

/** A child to launch, with the label it is shown with. */
export type PlannedChild = FanOutChild & { label: string };

/** A label of at most 40 characters taken from a directive (its `@sim` lines left out). */
export function labelFromDirective(directive: string): string {
  const line = oneLine(directive.replace(/^\s*@sim .*$/gm, ""));
  return line.length > 40 ? `${line.slice(0, 39)}…` : line || "child";
}

/**
 * The children of a fan-out: each directive with the reply's i-th tool call as its fork call (when
 * the reply has that many). The label is `label` (numbered when there are several), else the call's
 * description, else `fallbackLabels[i]`, else the directive's first words.
 */
export function planChildren(
  turn: ParentTurn,
  directives: readonly string[],
  options: { label?: string | undefined; fallbackLabels?: readonly string[] } = {},
): PlannedChild[] {
  return directives.map((directive, i) => {
    const call = turn.toolCalls[i]?.forkCall;
    const numbered =
      options.label === undefined
        ? undefined
        : directives.length === 1
          ? options.label
          : `${options.label} ${i + 1}`;
    const label =
      numbered ?? call?.description ?? options.fallbackLabels?.[i] ?? labelFromDirective(directive);
    const child: PlannedChild = { directive, label: label.slice(0, 256) };
    if (call !== undefined) child.forkCall = call;
    return child;
  });
}

/** How progress is shown. */
export type ProgressMode = "live" | "plain" | "json" | "none";

/** Options of {@link followChildren}. */
export interface FollowOptions {
  mode: ProgressMode;
  out: OutputStream;
  style: Style;
  /** Stops following (the children go on running). */
  signal: AbortSignal;
}

/** The result of {@link followChildren}. */
export interface FollowResult {
  /** One per child that ended, in child order. */
  results: ChildResult[];
  /** Children that had not ended when the signal stopped the wait. */
  unfinished: Child[];
}

/** Waits for every child's terminal event, showing progress as `options.mode` says. */
export async function followChildren(
  children: readonly Child[],
  options: FollowOptions,
): Promise<FollowResult> {
  const tracker = new RunTracker();
  for (const child of children) tracker.row(child.handle.runId, child.label);
  const byRun = new Map(children.map((child) => [child.handle.runId, child]));
  const out = options.out;
  const live = options.mode === "live" ? new LiveView(out) : undefined;
  const render = () => {
    const now = Date.now();
    const rows = tracker.rows().map((row) => {
      const child = byRun.get(row.runId)!;
      const cells = rowCells(row, now);
      cells[0] = colourStatus(options.style, cells[0]!);
      return [`child ${child.index}`, child.label, ...cells];
    });
    return renderTable(rows);
  };
  // Elapsed times move even when no event arrives.
  const ticker = live === undefined ? undefined : setInterval(() => live.update(render), 250);
  live?.update(render);

  const follow = async (child: Child): Promise<ChildResult | undefined> => {
    const events: ForkEvent[] = [];
    try {
      for await (const event of child.handle.events({ signal: options.signal })) {
        if (!tracker.apply(event)) continue;
        events.push(event);
        switch (options.mode) {
          case "json":
            writeLine(out, JSON.stringify({ kind: "event", child: child.index, ...event }));
            break;
          case "plain":
            if (event.type !== "llm.delta" && event.type !== "heartbeat")
              writeLine(out, eventLine(event, `child ${child.index}`));
            break;
          case "live":
            live!.update(render);
            break;
          case "none":
            break;
        }
        if (isTerminalEvent(event)) {
          return { child, outcome: forkOutcomeFromTerminalEvent(event), events };
        }
      }
    } catch (error) {
      if (options.signal.aborted) return undefined;
      const message = error instanceof Error ? error.message : String(error);
      const row = tracker.row(child.handle.runId);
      row.status = "failed";
      row.problem = message;
      live?.update(render);
      return {
        child,
        outcome: {
          status: "failed",
          runId: child.handle.runId,
          error: { code: "launch_failed", message, retryable: true },
          usage: emptyUsageTotals(),
        },
        events,
      };
    }
    return undefined; // the log ended without a terminal event: only when the signal stopped it
  };

  try {
    const settled = await Promise.all(children.map(follow));
    const results = settled.filter((result): result is ChildResult => result !== undefined);
    const ended = new Set(results.map((result) => result.child));
    return { results, unfinished: children.filter((child) => !ended.has(child)) };
  } finally {
    if (ticker !== undefined) clearInterval(ticker);
    live?.close();
  }
}

/** The `<task-notification>` a parent agent would append for this child. */
export function notificationOf(result: ChildResult): string {
  const context: Parameters<typeof taskNotificationFromOutcome>[1] = { description: result.child.label };
  if (result.child.forkCall !== undefined) context.toolUseId = result.child.forkCall.tool_use_id;
  return renderTaskNotification(taskNotificationFromOutcome(result.outcome, context));
}

/** The usage totals of an outcome. */
export function usageOf(outcome: ForkOutcome): UsageTotals {
  return outcome.status === "completed" ? outcome.result.usage : outcome.usage;
}
