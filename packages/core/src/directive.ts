// The child's directive block: the marked, signed fork boilerplate (the rules every fork follows),
// which fork call is the child's own, a worktree notice when it has one, then its directive.
import { createHash } from "node:crypto";
import { type ForkCall, isValidRunId, type TextBlock } from "@forkd/protocol";
import { InvalidForkParamsError } from "./errors.js";
import { escapeXml } from "./xml.js";

/** Tag name of the boilerplate: the protocol's marker of a fork's directive block. */
export const FORK_BOILERPLATE_TAG = "fork-boilerplate";

/** Version of the boilerplate this library writes (the `v` attribute). */
export const FORK_BOILERPLATE_VERSION = 1;

// ASCII on purpose: one character above U+00FF makes V8 hold the whole request body (hundreds of KB
// for a large parent) as a two-byte string, doubling the daemon's memory per run in flight.
/** The placeholder `tool_result` every child sees for every `tool_use` of the parent's reply. */
export const FORK_PLACEHOLDER_RESULT = "Fork started - processing in background";

/** The report format a fork's final message follows (parsed by `parseForkReport`). */
export const FORK_REPORT_FORMAT = [
  "Scope: <your assignment, in one line>",
  "Result: <what you found or did>",
  "Key files: <the files that matter, comma-separated>",
  "Files changed: <the files you changed, comma-separated, or none>",
  "Issues: <problems, risks and open questions, or none>",
].join("\n");

/** Most words a fork's report should have. */
export const FORK_REPORT_MAX_WORDS = 500;

/** The rules inside the boilerplate, the same for every fork of every parent. */
export const FORK_BOILERPLATE_RULES = [
  "You are a fork: a child agent started from a copy of the conversation above. You run on your own;",
  "your parent has moved on to other work and will read only your final message.",
  "- Do not fork. The fork tool is still listed only so that your prompt matches your parent's",
  "  prompt; calling it will be refused.",
  "- Do not converse. Nobody will answer a question or confirm a plan: decide, act, and finish.",
  "- Use your tools directly. Do the work yourself instead of describing or delegating it.",
  `- Every tool call of your parent's last message was answered "${FORK_PLACEHOLDER_RESULT}".`,
  "  Only the fork call named below is yours; the others belong to sibling forks. Leave their work alone.",
  "- Commit what you change before you finish: stage the files you touched and commit them with a",
  "  message that says why. Change nothing you do not commit.",
  `- Your final message is your report: under ${FORK_REPORT_MAX_WORDS} words, in exactly this format:`,
  FORK_REPORT_FORMAT,
].join("\n");

/** A fork that runs in a git worktree of its own. */
export interface WorktreeMapping {
  /** The parent's working directory: the root of every path in the inherited conversation. */
  parentCwd: string;
  /** The child's worktree: where those paths are now. */
  worktreePath: string;
}

/** What a directive block is made of. */
export interface DirectiveBlockOptions {
  /** The child's run id, written (and signed) in the opening tag. */
  runId: string;
  /** What the child is asked to do. */
  directive: string;
  /** Which of the parent's fork calls is this child's; absent for a programmatic fork. */
  forkCall?: ForkCall | undefined;
  /** Set when the child runs in its own worktree. */
  worktree?: WorktreeMapping | undefined;
}

/** A directive block found in a conversation and verified. */
export interface ParsedDirectiveBlock {
  version: number;
  runId: string;
  /** Everything after the opening tag. */
  body: string;
}

const OPENING_PATTERN = /^<fork-boilerplate v="(\d+)" run="([A-Za-z0-9_=-]+)" sig="([0-9a-f]{16})">/;

/** Start of every opening tag this library writes; a cheap first test before the full parse. */
export const FORK_BOILERPLATE_OPENING = `<${FORK_BOILERPLATE_TAG} v="`;

function signature(runId: string, body: string): string {
  return createHash("sha256")
    .update(`forkd-fork-boilerplate/v${FORK_BOILERPLATE_VERSION}\n${runId}\n${body}`, "utf8")
    .digest("hex")
    .slice(0, 16);
}

/**
 * The notice for a fork in a worktree: the inherited conversation's paths are the parent's, and
 * must be translated to the worktree.
 */
export function renderWorktreeNotice(worktree: WorktreeMapping): string {
  const parent = worktree.parentCwd.replace(/\/+$/, "");
  const child = worktree.worktreePath.replace(/\/+$/, "");
  return [
    `You are working in a git worktree of your own at ${child}, not in your parent's working directory ${parent}.`,
    `Paths in the conversation above are your parent's: translate them (${parent}/src/a.ts is ${child}/src/a.ts)`,
    `and read and write only under ${child}. Commit your changes in this worktree; your parent merges them.`,
  ].join("\n");
}

function renderForkCallLine(forkCall: ForkCall | undefined): string {
  if (forkCall === undefined) {
    return "Your fork call: none. You were forked programmatically; no tool call above is yours.";
  }
  const description =
    forkCall.description === undefined ? "" : `, description="${escapeXml(forkCall.description)}"`;
  return `Your fork call: tool_use_id="${escapeXml(forkCall.tool_use_id)}"${description}.`;
}

/**
 * Renders a child's directive block: the signed `<fork-boilerplate>` (which the recursion guard
 * recognises), the child's own fork call, a worktree notice when it has one, and its directive.
 * Siblings' blocks differ; everything before this block is identical for all of them.
 *
 * @throws {@link InvalidForkParamsError} for an invalid run id or an empty directive.
 */
export function renderDirectiveBlock(options: DirectiveBlockOptions): TextBlock {
  if (!isValidRunId(options.runId)) {
    throw new InvalidForkParamsError(
      "runId",
      `run id ${JSON.stringify(options.runId)} is not a valid run id`,
    );
  }
  if (options.directive.trim() === "")
    throw new InvalidForkParamsError("directive", "the directive is empty");
  const sections = [
    `${FORK_BOILERPLATE_RULES}\n</${FORK_BOILERPLATE_TAG}>`,
    renderForkCallLine(options.forkCall),
  ];
  if (options.worktree !== undefined) sections.push(renderWorktreeNotice(options.worktree));
  sections.push(`Your directive:\n${options.directive}`);
  const body = `\n${sections.join("\n\n")}`;
  const opening = `<${FORK_BOILERPLATE_TAG} v="${FORK_BOILERPLATE_VERSION}" run="${options.runId}" sig="${signature(options.runId, body)}">`;
  return { type: "text", text: `${opening}${body}` };
}

/**
 * Parses a text that starts with a directive block this library wrote, or returns `null`. The text
 * must start with the exact opening tag and its signature must match the rest of the text: the marker
 * quoted inside other text, a file or a tool result does not count.
 */
export function parseDirectiveBlock(text: string): ParsedDirectiveBlock | null {
  if (!text.startsWith(FORK_BOILERPLATE_OPENING)) return null;
  const match = OPENING_PATTERN.exec(text);
  if (match === null) return null;
  const [opening, version, runId, sig] = match as unknown as [string, string, string, string];
  const body = text.slice(opening.length);
  if (Number(version) !== FORK_BOILERPLATE_VERSION || signature(runId, body) !== sig) return null;
  return { version: Number(version), runId, body };
}
