// What a chaos run must leave behind, checked on the stored event logs and the tool ledger: each
// log's seq contiguous from 1, exactly one terminal event and nothing after it, every accepted spec
// ended, no tool executed twice, no model turn paid twice, and a completed run's bill that covers
// the responses its log records and no call its log does not show.
import { tokenCountsOf } from "@forkd/core";
import { type ForkEvent, isTerminalEvent } from "@forkd/protocol";

/** One broken invariant, with the run it was found in. */
export interface ChaosViolation {
  runId: string;
  invariant:
    | "contiguous_seq"
    | "one_terminal_event"
    | "accepted_spec_ended"
    | "tool_executed_once"
    | "turn_paid_once"
    | "bill_matches_log";
  detail: string;
}

/** What the checker reads. */
export interface ChaosEvidence {
  /** Runs whose spec JetStream acknowledged (`published()` resolved). */
  acceptedRunIds: readonly string[];
  /** Each accepted run's stored log (empty when nothing was stored). */
  logs: ReadonlyMap<string, readonly ForkEvent[]>;
  /** How many times each run's tool wrote its line in the ledger. */
  toolExecutions: ReadonlyMap<string, number>;
}

const TOKEN_FIELDS = [
  "input_tokens",
  "cache_write_5m_tokens",
  "cache_write_1h_tokens",
  "cache_read_tokens",
  "output_tokens",
  "llm_calls",
] as const;

/** Checks one run's log; returns what it breaks (nothing for a sound log). */
export function checkRunLog(
  runId: string,
  log: readonly ForkEvent[],
  toolExecutions: number,
): ChaosViolation[] {
  const violations: ChaosViolation[] = [];
  const violation = (invariant: ChaosViolation["invariant"], detail: string) =>
    violations.push({ runId, invariant, detail });
  const gap = log.findIndex((event, index) => event.seq !== index + 1);
  if (gap >= 0) violation("contiguous_seq", `event ${gap + 1} of the log has seq ${log[gap]!.seq}`);
  const terminals = log.filter(isTerminalEvent);
  const last = log.at(-1);
  if (terminals.length === 0 || last === undefined || !isTerminalEvent(last)) {
    violation("accepted_spec_ended", `the log ends with ${last?.type ?? "nothing"}`);
  }
  if (terminals.length > 1) violation("one_terminal_event", `${terminals.length} terminal events`);
  if (toolExecutions > 1) violation("tool_executed_once", `its tool ran ${toolExecutions} times`);
  const messages = log.filter((event) => event.type === "llm.message");
  const turns = new Set(messages.map((event) => event.turn));
  if (turns.size !== messages.length) {
    violation("turn_paid_once", `${messages.length} model responses recorded for ${turns.size} turns`);
  }
  if (last?.type === "completed") {
    // The bill covers every response the log records, and counts no model call the log does not
    // show being asked. (It may hold more than the recorded responses: a call cut after the provider
    // started it is billed for its input, and resent; only the resend's response is recorded.)
    const recorded: Record<(typeof TOKEN_FIELDS)[number], number> = {
      input_tokens: 0,
      cache_write_5m_tokens: 0,
      cache_write_1h_tokens: 0,
      cache_read_tokens: 0,
      output_tokens: 0,
      llm_calls: messages.length,
    };
    for (const message of messages) {
      const counts = tokenCountsOf(message.usage);
      for (const field of TOKEN_FIELDS) if (field !== "llm_calls") recorded[field] += counts[field];
    }
    const billed = last.result.usage;
    const short = TOKEN_FIELDS.filter((field) => billed[field] < recorded[field]);
    const requests = log.filter((event) => event.type === "llm.request").length;
    const problems = short.map((field) => `${field} billed ${billed[field]}, recorded ${recorded[field]}`);
    if (billed.llm_calls > requests)
      problems.push(`${billed.llm_calls} calls billed, ${requests} requests logged`);
    if (problems.length > 0) violation("bill_matches_log", problems.join("; "));
  }
  return violations;
}

/** Checks every accepted run. */
export function checkChaosEvidence(evidence: ChaosEvidence): ChaosViolation[] {
  return evidence.acceptedRunIds.flatMap((runId) =>
    checkRunLog(runId, evidence.logs.get(runId) ?? [], evidence.toolExecutions.get(runId) ?? 0),
  );
}
