// Snapshots the parent's last request and reply into a ForkPrefix: an isolated deep copy that keeps
// every byte the provider's cache is keyed on, key order and unfinished tool calls included.
import {
  type AssistantMessage,
  AssistantMessageSchema,
  BetasSchema,
  type CacheSafeParams,
  CacheSafeParamsSchema,
  type ForkPrefix,
  ProviderUsageSchema,
} from "@forkd/protocol";
import { InvalidPrefixError } from "./errors.js";
import { verbatimValuesOf } from "./verbatim-values.js";

// Fields of a request that choose how the answer is transported, not what is asked.
const TRANSPORT_FIELDS = ["stream"] as const;

/**
 * Copies the request the parent last sent (an Anthropic `MessageCreateParams`) into cache-safe params.
 *
 * The copy is a `structuredClone`: later changes to the parent's objects do not reach it, and object
 * key order is kept (the provider renders tool inputs as sent). Nothing is filtered: incomplete or
 * interrupted `tool_use` blocks stay, because removing them would break both the tool_use/tool_result
 * pairing and the cached prefix. Only `stream` is dropped: the LlmClient chooses the transport.
 *
 * @throws {@link InvalidPrefixError} when `request` is not a Messages API request (no model, no
 * messages array, a message without a role) or holds values that cannot be cloned.
 */
export function snapshotCacheSafeParams(request: unknown): CacheSafeParams {
  const checked = CacheSafeParamsSchema.safeParse(request);
  if (!checked.success) throw invalid("request", checked.error.issues);
  // zod rebuilds objects (and may reorder keys): clone the caller's object, not the parsed one.
  const copy = cloneOrThrow(request, "request") as Record<string, unknown>;
  for (const field of TRANSPORT_FIELDS) delete copy[field];
  return copy as CacheSafeParams;
}

/** Options of {@link createForkPrefix}. */
export interface ForkPrefixOptions {
  /**
   * The `anthropic-beta` list the parent's request was sent with (its header, split on commas).
   * Cache-safe: the child is sent with exactly this list.
   */
  betas?: readonly string[] | undefined;
  /**
   * The exact text `request` was read from (the body the parent sent), when the caller has it: the
   * elements a JavaScript reading would write differently then travel as that text
   * (`ForkPrefix.verbatim`), so that the children send them as the parent did.
   */
  requestText?: string | undefined;
}

/**
 * Builds the {@link ForkPrefix} a child inherits: the parent's last request, the reply it got and
 * the betas it was sent with. `reply` is absent (or `null`) for a programmatic fork taken where
 * the history ends on a user turn.
 *
 * The reply enters the prefix as `{ role, content }`, plus its `id` and `usage` when it is the
 * response as the API returned it: those two serve cache diagnostics (the child asks the provider
 * to compare with that id, and expects to read what that usage cached) and never enter a request,
 * where the API refuses them inside `messages` ("Extra inputs are not permitted"), as it does
 * `type`, `model`, `stop_reason` and `stop_sequence`, which are dropped.
 *
 * @throws {@link InvalidPrefixError} as {@link snapshotCacheSafeParams}, or when `reply` is not an
 * assistant message, or a beta name is not one.
 */
export function createForkPrefix(
  request: unknown,
  reply?: unknown,
  options: ForkPrefixOptions = {},
): ForkPrefix {
  const params = snapshotCacheSafeParams(request);
  const prefix: ForkPrefix = { params };
  if (reply !== undefined && reply !== null) {
    const checked = AssistantMessageSchema.safeParse(reply);
    if (!checked.success) throw invalid("reply", checked.error.issues);
    const { content } = reply as AssistantMessage;
    prefix.reply = {
      role: "assistant",
      content: cloneOrThrow(content, "reply") as AssistantMessage["content"],
    };
    const { id, usage } = reply as { id?: unknown; usage?: unknown };
    if (typeof id === "string" && id.length > 0) prefix.reply.id = id;
    const checkedUsage = ProviderUsageSchema.safeParse(usage);
    if (checkedUsage.success) prefix.reply.usage = cloneOrThrow(usage, "reply usage");
  }
  if (options.betas !== undefined && options.betas.length > 0) {
    const checked = BetasSchema.safeParse(options.betas);
    if (!checked.success) throw invalid("betas", checked.error.issues);
    prefix.betas = [...options.betas];
  }
  if (options.requestText !== undefined) {
    // Paths into the request are paths into its copy: only `stream`, at the top, was dropped.
    const verbatim = verbatimValuesOf(request as Record<string, unknown>, options.requestText);
    if (verbatim.length > 0) prefix.verbatim = verbatim;
  }
  return prefix;
}

/** The reply as a message of a request: `{ role, content }`, whatever else the caller's object holds. */
export function replyAsMessage(reply: Pick<AssistantMessage, "content">): AssistantMessage {
  return { role: "assistant", content: reply.content };
}

function cloneOrThrow(value: unknown, what: string): unknown {
  try {
    return structuredClone(value);
  } catch (cause) {
    throw new InvalidPrefixError(`the ${what} cannot be copied: ${(cause as Error).message}`, { cause });
  }
}

function invalid(
  what: string,
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
): InvalidPrefixError {
  const issue = issues[0];
  const path = (issue?.path ?? []).map((p) => (typeof p === "number" ? p : String(p)));
  const where = path.length > 0 ? ` at ${path.join(".")}` : "";
  return new InvalidPrefixError(`the ${what} is not valid${where}: ${issue?.message ?? "schema mismatch"}`, {
    path,
  });
}
