// `forkd fork --from FILE --directive …`: one child per directive from a stored parent turn,
// launched warm-first, followed to their ends (or, with --no-wait, only until their specs are out).
import { hostname } from "node:os";
import type { ForkParams } from "@forkd/core";
import { totalTokensOf } from "@forkd/core";
import {
  type Child,
  type ChildResult,
  followChildren,
  notificationOf,
  planChildren,
  usageOf,
} from "../children.js";
import type { CommandContext } from "../context.js";
import { UsageError } from "../errors.js";
import { formatElapsed, formatInteger, formatPercent, formatUsd } from "../format.js";
import { isInteractive, styleFor, writeLine } from "../io.js";
import { connectTarget, loadOwnerKey, NATS_FLAGS, natsTarget, openSubagent } from "../nats.js";
import {
  COMMON_FLAGS,
  expectPositionals,
  parseCommandLine,
  parseDuration,
  parseInteger,
} from "../options.js";
import { readParentTurn } from "../parent-turn.js";
import { cacheReadShare } from "../run-tracker.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  ...NATS_FLAGS,
  from: { type: "string" },
  directive: { type: "string", multiple: true },
  label: { type: "string" },
  "max-turns": { type: "string" },
  timeout: { type: "string" },
  "parent-id": { type: "string" },
  "no-wait": { type: "boolean" },
  json: { type: "boolean" },
} as const;

function printResult(result: ChildResult, context: CommandContext): void {
  const out = context.io.stdout;
  const style = styleFor(out, context.io.env);
  const { child, outcome } = result;
  const usage = usageOf(outcome);
  const tokens = totalTokensOf(usage);
  const facts =
    outcome.status === "completed"
      ? [
          `${outcome.result.turns} turn${outcome.result.turns === 1 ? "" : "s"}`,
          `${outcome.result.tool_uses} tool use${outcome.result.tool_uses === 1 ? "" : "s"}`,
          formatElapsed(outcome.result.duration_ms),
        ]
      : [];
  facts.push(
    `${formatInteger(tokens)} tokens (${formatPercent(cacheReadShare(usage))} of the input from the cache)`,
    formatUsd(usage.cost_usd),
  );
  const status = outcome.status === "completed" ? style.green(outcome.status) : style.red(outcome.status);
  writeLine(
    out,
    `${style.bold(`child ${child.index}`)}  ${child.label}  ${status}  run ${child.handle.runId}`,
  );
  writeLine(out, `  ${facts.join(" · ")}`);
  const body =
    outcome.status === "completed"
      ? outcome.result.final_text
      : outcome.status === "killed"
        ? `aborted: ${outcome.reason}`
        : `${outcome.error.code}: ${outcome.error.message}`;
  for (const line of body.split("\n")) writeLine(out, `  ${line}`);
  writeLine(out);
}

/** The `--json` line of a finished child. */
function resultJson(result: ChildResult) {
  return {
    kind: "result",
    child: result.child.index,
    run_id: result.child.handle.runId,
    label: result.child.label,
    status: result.outcome.status,
    outcome: result.outcome,
    notification: notificationOf(result),
  };
}

/** Each child's result, then the total. */
function printSummary(results: readonly ChildResult[], childCount: number, context: CommandContext): void {
  const out = context.io.stdout;
  writeLine(out);
  for (const result of results) printResult(result, context);
  const completed = results.filter((result) => result.outcome.status === "completed").length;
  const cost = results.reduce<number | null>((sum, result) => {
    const usd = usageOf(result.outcome).cost_usd;
    return sum === null || usd === null ? null : sum + usd;
  }, 0);
  const tokens = results.reduce((sum, result) => sum + totalTokensOf(usageOf(result.outcome)), 0);
  const children = childCount === 1 ? "child" : "children";
  writeLine(
    out,
    `${completed} of ${childCount} ${children} completed; ${formatInteger(tokens)} tokens, ${formatUsd(cost)}`,
  );
}

/** Forks and follows. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("fork", args, OPTIONS);
  expectPositionals("fork", positionals, { min: 0, max: 0, names: "" });
  if (values.from === undefined) {
    throw new UsageError("--from FILE is required", { hint: "see `forkd fork --help`" });
  }
  const limits: NonNullable<ForkParams["limits"]> = {};
  if (values["max-turns"] !== undefined) limits.max_turns = parseInteger("max-turns", values["max-turns"]);
  if (values.timeout !== undefined) limits.timeout_ms = parseDuration("timeout", values.timeout);
  const target = natsTarget(values, context.io.env);
  const turn = await readParentTurn(values.from);
  let directives = values.directive ?? [];
  if (directives.some((directive) => directive.trim() === ""))
    throw new UsageError("--directive: empty text");
  if (directives.length === 0) {
    directives = turn.toolCalls
      .map((call) => call.prompt)
      .filter((p): p is string => p !== undefined && p !== "");
    if (directives.length === 0) {
      throw new UsageError(
        "no --directive given, and the reply has no tool call with a prompt to take one from",
      );
    }
  }
  const planned = planChildren(turn, directives, { label: values.label });
  const out = context.io.stdout;
  const err = context.io.stderr;
  const json = values.json === true;
  const style = styleFor(out, context.io.env);
  const signal = context.interruption.signal;

  const nc = await connectTarget(target, { name: "forkd-fork" });
  try {
    const forks = await openSubagent(nc, target.prefix, await loadOwnerKey(context.io.env));
    const host = hostname();
    const base: Omit<ForkParams, "directive" | "forkCall" | "label" | "runId"> = {
      prefix: turn.prefix,
      parent: { agent_id: values["parent-id"] ?? `forkd-cli@${host}`, host },
    };
    if (Object.keys(limits).length > 0) base.limits = limits;
    const handles = forks.fanOut(base, planned, { warmFirst: true });
    const children: Child[] = handles.map((handle, i) => ({
      index: i + 1,
      label: planned[i]!.label,
      forkCall: planned[i]!.forkCall,
      handle,
    }));
    if (!json) {
      writeLine(
        out,
        `forking ${children.length} ${children.length === 1 ? "child" : "children"} from ${turn.source} ` +
          `(~${formatInteger(turn.approxTokens)} tokens, ${turn.prefix.params.model}) on ${target.servers.join(",")}, warm-first`,
      );
      for (const child of children)
        writeLine(out, `  child ${child.index}: run ${child.handle.runId}  ${child.label}`);
      writeLine(out, `  group ${handles[0]!.groupId} (forkd abort --group, forkd budget)`);
    }

    if (values["no-wait"]) {
      if (children.length > 1 && !json) {
        writeLine(
          err,
          "waiting for the first child's response to begin before publishing its siblings (warm-first)…",
        );
      }
      // Warm-first publishes the siblings in the background: wait until every spec is stored.
      await Promise.race([
        Promise.all(children.map((child) => child.handle.published())),
        new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true })),
      ]);
      if (signal.aborted) return 130;
      for (const child of children) {
        if (json)
          writeLine(
            out,
            JSON.stringify({
              kind: "launched",
              child: child.index,
              run_id: child.handle.runId,
              label: child.label,
            }),
          );
      }
      if (!json) writeLine(out, "published; follow with `forkd watch <run id>`, list with `forkd ps`");
      await forks.close();
      await nc.drain();
      return 0;
    }

    const mode = json ? "json" : isInteractive(out, context.io.env) ? "live" : "plain";
    const { results, unfinished } = await followChildren(children, { mode, out, style, signal });
    if (unfinished.length > 0) {
      // Ctrl-C: the children would go on running on the cluster; the user asked to stop.
      await Promise.all(
        unfinished.map((child) => child.handle.abort("forkd fork was interrupted").catch(() => undefined)),
      );
      writeLine(
        err,
        `interrupted: sent an abort to ${unfinished.length} unfinished ${unfinished.length === 1 ? "child" : "children"}`,
      );
    }
    if (json) for (const result of results) writeLine(out, JSON.stringify(resultJson(result)));
    else printSummary(results, children.length, context);
    await forks.close();
    if (unfinished.length > 0) return 130;
    return results.every((result) => result.outcome.status === "completed") ? 0 : 1;
  } finally {
    await nc.close().catch(() => undefined);
  }
}
