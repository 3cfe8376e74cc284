/**
 * The scripted model: a deterministic, stateless stand-in for Claude. It answers the directive
 * (the last text block of the last user message that has text) and follows the `@sim` script in
 * it. Which scripted turn it is on is read from the conversation: the number of assistant
 * messages after the directive's message. Same conversation, same answer, in any process.
 */
import { createHash } from "node:crypto";
import type { FaultSpec } from "./faults.js";
import { parseScript, type ScriptTurn } from "./script.js";
import { CHARS_PER_TOKEN, countTextTokens, renderBlock } from "./tokenizer.js";
import type { ContentBlock, MessagesRequest, OtherBlock, OutputBlock, StopReason } from "./types.js";

/** What the scripted model answers to one request. */
export interface ModelReply {
  content: OutputBlock[];
  /** Output tokens of each content block. @unit tokens */
  blockTokens: number[];
  /** @unit tokens */
  outputTokens: number;
  stopReason: StopReason;
  stopSequence: string | null;
  /** Scripted turn answered (0-based). */
  turn: number;
  /** Per-request latency asked for by the script. */
  ttftMs?: number;
  tokensPerSecond?: number;
  /** Fault the script asks for on this turn. */
  fault?: { spec: FaultSpec; once: boolean };
}

const WRITE_TOOLS = new Set(["Write", "Edit", "MultiEdit", "NotebookEdit"]);
const PATH_KEYS = ["file_path", "path", "notebook_path"];
// A path starts where a word does (the lookbehind), so a long run of word characters is scanned
// once, not once per position; and only the start of the scope is searched (a child's directive
// names its files up front), so a prompt of a million characters costs what one of 8k does.
const FILE_LIKE = /(?<![\w./-])(?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}\b/g;
const FILE_SCAN_CHARS = 8192;
const WORDS = [
  "fork",
  "cache",
  "prefix",
  "token",
  "daemon",
  "stream",
  "result",
  "directive",
  "sibling",
  "parent",
  "child",
  "turn",
  "tool",
  "event",
  "abort",
  "replay",
  "subject",
  "ledger",
  "attempt",
  "claim",
];

type Block = ContentBlock | OtherBlock;

function blocksOf(content: string | Block[] | undefined): Block[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : (content ?? []);
}

function sha(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Deterministic filler text of exactly `chars` characters, not ending in whitespace. */
export function fillerText(chars: number, seed: string): string {
  if (chars <= 0) return "";
  let state = Number.parseInt(seed.slice(0, 8), 16) >>> 0;
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const word = WORDS[state % WORDS.length]!;
    parts.push(word);
    length += word.length + 1;
  }
  return endClean(parts.join(" ").slice(0, chars));
}

function endClean(text: string): string {
  return text.length > 0 && /\s$/.test(text) ? `${text.slice(0, -1)}.` : text;
}

/** Text of exactly `tokens` tokens: `base` cut or padded with filler. */
function sized(base: string, tokens: number, seed: string): string {
  const chars = tokens * CHARS_PER_TOKEN;
  if (base.length >= chars) return endClean(base.slice(0, chars));
  const gap = chars - base.length;
  if (base === "") return fillerText(chars, seed);
  if (gap < 3) return base + ".".repeat(gap);
  return `${base}\n\n${fillerText(gap - 2, seed)}`;
}

function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim() !== "") ?? "";
  const t = line.trim();
  return t.length > 120 ? `${t.slice(0, 117)}...` : t;
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return (content as Block[]).map(renderBlock).join("\n");
  return "";
}

interface ToolHistory {
  name: string;
  input: Record<string, unknown>;
  result: string | undefined;
  isError: boolean;
}

function collectToolHistory(messages: MessagesRequest["messages"], from: number): ToolHistory[] {
  const calls = new Map<string, ToolHistory>();
  const order: ToolHistory[] = [];
  for (let i = from; i < messages.length; i++) {
    const m = messages[i]!;
    for (const b of blocksOf(m.content)) {
      if (m.role === "assistant" && b.type === "tool_use") {
        const u = b as { id: string; name: string; input: Record<string, unknown> };
        const h: ToolHistory = { name: u.name, input: u.input, result: undefined, isError: false };
        calls.set(u.id, h);
        order.push(h);
      } else if (m.role === "user" && b.type === "tool_result") {
        const r = b as { tool_use_id: string; content?: unknown; is_error?: boolean };
        const h = calls.get(r.tool_use_id);
        if (h !== undefined) {
          h.result = resultText(r.content);
          h.isError = r.is_error === true;
        }
      }
    }
  }
  return order;
}

function pathsOf(input: Record<string, unknown>): string[] {
  return PATH_KEYS.map((k) => input[k]).filter((v): v is string => typeof v === "string" && v !== "");
}

/**
 * A forked child's message opens with forkd's fork boilerplate and gives its task after this line; a
 * real model reads its task there, so the report's scope is taken from there too.
 */
const DIRECTIVE_HEADING = "\nYour directive:\n";

function taskOf(text: string): string {
  const at = text.lastIndexOf(DIRECTIVE_HEADING);
  return at === -1 ? text : text.slice(at + DIRECTIVE_HEADING.length);
}

function report(scope: string, seed: string, history: ToolHistory[], issues: string[]): string {
  const keyFiles = new Set<string>(scope.slice(0, FILE_SCAN_CHARS).match(FILE_LIKE) ?? []);
  const changed = new Set<string>();
  const results: string[] = [];
  for (const h of history) {
    for (const p of pathsOf(h.input)) {
      keyFiles.add(p);
      if (WRITE_TOOLS.has(h.name) && h.result !== undefined && !h.isError) changed.add(p);
    }
    if (h.result === undefined) continue;
    const first = firstLine(h.result);
    if (h.isError) issues.push(`${h.name} failed: ${first}`);
    else results.push(`${h.name} → ${JSON.stringify(first)}`);
  }
  const files = [...keyFiles].slice(0, 12);
  const result =
    `done [sim ${seed.slice(0, 8)}]` +
    (results.length > 0
      ? `; ${results.length} tool result${results.length === 1 ? "" : "s"}: ${results.join("; ")}`
      : "");
  return [
    `Scope: ${firstLine(taskOf(scope)) || "(no directive)"}`,
    `Result: ${result}`,
    `Key files: ${files.length > 0 ? files.join(", ") : "none"}`,
    `Files changed: ${changed.size > 0 ? [...changed].join(", ") : "none"}`,
    `Issues: ${issues.length > 0 ? issues.join("; ") : "none"}`,
  ].join("\n");
}

/**
 * Whether a user message answers a tool search (a tool result holding `tool_reference` blocks). Its
 * text ("Tool loaded.", from Claude Code) is the agent harness's note within the turn, not a new
 * directive.
 */
function answersToolSearch(blocks: readonly Block[]): boolean {
  return blocks.some(
    (b) =>
      b.type === "tool_result" &&
      Array.isArray((b as { content?: unknown }).content) &&
      (b as { content: { type?: unknown }[] }).content.some((c) => c?.type === "tool_reference"),
  );
}

/**
 * Finds the message holding the directive: the last user message with a top-level text block, other
 * than one answering a tool search.
 */
function findDirective(messages: MessagesRequest["messages"]): { index: number; text: string } {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    const blocks = blocksOf(m.content);
    if (answersToolSearch(blocks)) continue;
    for (let j = blocks.length - 1; j >= 0; j--) {
      const b = blocks[j]!;
      if (b.type === "text") return { index: i, text: (b as { text: string }).text };
    }
  }
  let last = messages.length - 1;
  while (last > 0 && messages[last]!.role !== "user") last--;
  return { index: last, text: "" };
}

function thinkingEnabled(req: MessagesRequest): boolean {
  return req.thinking !== undefined && req.thinking.type !== "disabled";
}

/** Runs the scripted model on a validated request. */
export function runScriptedModel(req: MessagesRequest): ModelReply {
  const messages = req.messages;
  const directive = findDirective(messages);
  const prefill = messages[messages.length - 1]!.role === "assistant" ? 1 : 0;
  let turn = 0;
  for (let i = directive.index + 1; i < messages.length - prefill; i++)
    if (messages[i]!.role === "assistant") turn++;
  const script = parseScript(directive.text);
  const scripted: ScriptTurn | undefined = script.turns[turn];
  const settings = scripted ?? script.turns[script.turns.length - 1]!;
  const step: ScriptTurn = scripted ?? { tools: [] };
  const seed = sha(`${req.model}\u0000${directive.index}\u0000${directive.text}\u0000${turn}`);
  const issues = [...script.problems];
  const content: OutputBlock[] = [];

  // With thinking `enabled` the API's model always starts its turn with a thinking block (adaptive
  // may skip it), and the API refuses tool results whose calls' turn lacks it: without a script
  // line the block is one token, so that a client sending the turn back as received is accepted.
  const thinkTokens =
    req.thinking?.type === "enabled" ? Math.max(step.thinkTokens ?? 0, 1) : step.thinkTokens;
  if (thinkTokens !== undefined && thinkTokens > 0 && thinkingEnabled(req)) {
    const budget = req.thinking?.type === "enabled" ? req.thinking.budget_tokens : Number.POSITIVE_INFINITY;
    const n = Math.min(thinkTokens, budget);
    content.push({
      type: "thinking",
      thinking: fillerText(n * CHARS_PER_TOKEN, sha(`think:${seed}`)),
      signature: `sim_sig_${seed.slice(0, 32)}`,
    });
  }

  let stopReason: StopReason = "end_turn";
  let calls = step.tools;
  if (calls.length > 0) {
    const available = new Set((req.tools ?? []).map((t) => t.name));
    const unknown = calls.filter((c) => !available.has(c.name)).map((c) => c.name);
    if (unknown.length > 0) {
      const list = available.size > 0 ? [...available].join(", ") : "none";
      issues.push(
        `tool${unknown.length > 1 ? "s" : ""} ${unknown.map((n) => `"${n}"`).join(", ")} not in the request's tools (available: ${list})`,
      );
      calls = [];
    } else if (req.tool_choice?.type === "none") {
      issues.push('tool calls skipped: tool_choice is "none"');
      calls = [];
    }
  }
  if (calls.length > 0) {
    const text =
      step.say ?? (step.textTokens !== undefined ? fillerText(step.textTokens * CHARS_PER_TOKEN, seed) : "");
    if (text !== "") content.push({ type: "text", text });
    calls.forEach((c, i) => {
      content.push({
        type: "tool_use",
        id: `toolu_sim${sha(`${seed}:${i}`).slice(0, 21)}`,
        name: c.name,
        input: c.input,
      });
    });
    stopReason = "tool_use";
  } else {
    const history = collectToolHistory(messages, directive.index + 1);
    const base = step.say ?? report(script.text, seed, history, issues);
    const text = step.textTokens !== undefined ? sized(base, step.textTokens, seed) : base;
    if (text !== "") content.push({ type: "text", text });
  }

  let stopSequence: string | null = null;
  if (step.stop !== undefined) stopReason = step.stop;
  if (stopReason === "stop_sequence") stopSequence = req.stop_sequences?.[0] ?? null;

  // Stop sequences cut the text at the first one found.
  const stops = req.stop_sequences ?? [];
  if (stops.length > 0) {
    for (let i = 0; i < content.length; i++) {
      const b = content[i]!;
      if (b.type !== "text") continue;
      let at = -1;
      let found: string | null = null;
      for (const s of stops) {
        const k = s === "" ? -1 : b.text.indexOf(s);
        if (k >= 0 && (at < 0 || k < at)) {
          at = k;
          found = s;
        }
      }
      if (found !== null) {
        b.text = b.text.slice(0, at);
        content.length = b.text === "" ? i : i + 1;
        stopReason = "stop_sequence";
        stopSequence = found;
        break;
      }
    }
  }

  // max_tokens cuts the output.
  const blockTokens: number[] = [];
  let output = 0;
  const max = req.max_tokens ?? Number.POSITIVE_INFINITY;
  for (let i = 0; i < content.length; i++) {
    const b = content[i]!;
    const tokens = countTextTokens(renderBlock(b as OtherBlock));
    if (output + tokens <= max) {
      blockTokens.push(tokens);
      output += tokens;
      continue;
    }
    const room = max - output;
    if (room > 0 && (b.type === "text" || b.type === "thinking")) {
      const chars = room * CHARS_PER_TOKEN;
      if (b.type === "text") b.text = b.text.slice(0, chars);
      else b.thinking = b.thinking.slice(0, chars);
      blockTokens.push(room);
      output += room;
      content.length = i + 1;
    } else {
      content.length = i;
    }
    stopReason = "max_tokens";
    stopSequence = null;
    break;
  }

  const reply: ModelReply = { content, blockTokens, outputTokens: output, stopReason, stopSequence, turn };
  if (settings.ttftMs !== undefined) reply.ttftMs = settings.ttftMs;
  if (settings.tokensPerSecond !== undefined) reply.tokensPerSecond = settings.tokensPerSecond;
  if (scripted?.fault !== undefined) reply.fault = scripted.fault;
  return reply;
}
