/**
 * The `@sim` script language: lines of a directive that start with `@sim ` steer the scripted
 * model. Everything else in the directive is ordinary text. Turns are separated by `@sim turn`.
 *
 * | line | effect |
 * | --- | --- |
 * | `@sim tool <Name> <json>` | call tool `Name` with that input (default `{}`); several lines → several calls in one turn |
 * | `@sim turn` | start the next model turn (after the tool results come back) |
 * | `@sim text <n>` | the turn's text block is exactly n tokens |
 * | `@sim say <text>` | the turn's text is exactly this (several lines are joined by "\n") |
 * | `@sim think <n>` | a thinking block of n tokens first (only if the request enables thinking; `enabled` always has one) |
 * | `@sim ttft <ms>` | time to first token, this turn and later ones |
 * | `@sim tps <n>` | output tokens per second, this turn and later ones |
 * | `@sim fault <spec>` | inject a fault into this turn's requests (see {@link parseFault}) |
 * | `@sim fault-once <spec>` | the same, only the first time this exact request is seen |
 * | `@sim stop <reason>` | force the stop reason (end_turn, max_tokens, stop_sequence, refusal, pause_turn) |
 */
import { parseJsonText } from "@forkd/protocol/internal";
import { type FaultSpec, parseFault } from "./faults.js";
import type { StopReason } from "./types.js";

/** A tool call a script asks for. */
export interface ScriptToolCall {
  name: string;
  input: Record<string, unknown>;
}

/** What one model turn of a script does. */
export interface ScriptTurn {
  tools: ScriptToolCall[];
  /** @unit tokens */
  textTokens?: number;
  say?: string;
  /** @unit tokens */
  thinkTokens?: number;
  /** @unit milliseconds */
  ttftMs?: number;
  /** @unit tokens per second */
  tokensPerSecond?: number;
  fault?: { spec: FaultSpec; once: boolean };
  stop?: StopReason;
}

/** A parsed directive. */
export interface Script {
  /** The directive without its `@sim` lines. */
  text: string;
  /** At least one turn (an empty one when there is no script). */
  turns: ScriptTurn[];
  /** Lines that could not be understood, each with why. */
  problems: string[];
}

const STOP_REASONS = new Set([
  "end_turn",
  "max_tokens",
  "stop_sequence",
  "refusal",
  "pause_turn",
  "tool_use",
]);
const LINE = /^[ \t]*@sim[ \t]+(\S+)[ \t]*(.*?)[ \t]*$/;

function wholeNumber(v: string, what: string): number {
  const n = Number(v);
  if (v === "" || !Number.isFinite(n) || n < 0) throw new Error(`${what} needs a number ≥ 0, got "${v}"`);
  return Math.floor(n);
}

/** Parses the `@sim` lines of a directive. Never throws: bad lines are listed in `problems`. */
export function parseScript(directive: string): Script {
  const turns: ScriptTurn[] = [{ tools: [] }];
  const problems: string[] = [];
  const text: string[] = [];
  if (!directive.includes("@sim")) return { text: directive, turns, problems };
  for (const line of directive.split(/\r?\n/)) {
    const m = LINE.exec(line);
    if (m === null) {
      text.push(line);
      continue;
    }
    const command = m[1]!;
    const arg = m[2] ?? "";
    const turn = turns[turns.length - 1]!;
    try {
      switch (command) {
        case "turn":
          turns.push({ tools: [] });
          break;
        case "tool": {
          const sp = arg.search(/\s/);
          const name = sp < 0 ? arg : arg.slice(0, sp);
          const json = sp < 0 ? "" : arg.slice(sp + 1).trim();
          if (name === "") throw new Error("tool needs a name");
          let input: unknown = {};
          if (json !== "") {
            try {
              input = parseJsonText(json);
            } catch (e) {
              throw new Error(`tool ${name}: input is not JSON (${(e as Error).message})`);
            }
          }
          if (typeof input !== "object" || input === null || Array.isArray(input)) {
            throw new Error(`tool ${name}: input must be a JSON object`);
          }
          turn.tools.push({ name, input: input as Record<string, unknown> });
          break;
        }
        case "text":
          turn.textTokens = wholeNumber(arg, "text");
          break;
        case "say":
          turn.say = turn.say === undefined ? arg : `${turn.say}\n${arg}`;
          break;
        case "think":
          turn.thinkTokens = wholeNumber(arg, "think");
          break;
        case "ttft":
          turn.ttftMs = wholeNumber(arg, "ttft");
          break;
        case "tps":
          turn.tokensPerSecond = wholeNumber(arg, "tps");
          break;
        case "fault":
        case "fault-once":
          turn.fault = { spec: parseFault(arg), once: command === "fault-once" };
          break;
        case "stop":
          if (!STOP_REASONS.has(arg)) throw new Error(`stop: unknown stop reason "${arg}"`);
          turn.stop = arg as StopReason;
          break;
        default:
          throw new Error(`unknown command "${command}"`);
      }
    } catch (e) {
      problems.push(`@sim ${command}: ${(e as Error).message}`);
    }
  }
  // Latency settings carry over to later turns.
  for (let i = 1; i < turns.length; i++) {
    const prev = turns[i - 1]!;
    const t = turns[i]!;
    if (t.ttftMs === undefined && prev.ttftMs !== undefined) t.ttftMs = prev.ttftMs;
    if (t.tokensPerSecond === undefined && prev.tokensPerSecond !== undefined)
      t.tokensPerSecond = prev.tokensPerSecond;
  }
  return { text: text.join("\n"), turns, problems };
}
