// Snapshots the parent's last request and reply into a ForkPrefix: an isolated deep copy that keeps
// every byte the provider's cache is keyed on, key order and unfinished tool calls included.
import {
  type AssistantMessage,
  AssistantMessageSchema,
  type CacheSafeParams,
  CacheSafeParamsSchema,
  type ForkPrefix,
} from "@forkd/protocol";
import { InvalidPrefixError } from "./errors.js";

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

/**
 * Builds the {@link ForkPrefix} a child inherits: the parent's last request and the reply it got.
 * `reply` is absent for a programmatic fork taken where the history ends on a user turn.
 *
 * @throws {@link InvalidPrefixError} as {@link snapshotCacheSafeParams}, or when `reply` is not an
 * assistant message.
 */
export function createForkPrefix(request: unknown, reply?: unknown): ForkPrefix {
  const params = snapshotCacheSafeParams(request);
  if (reply === undefined) return { params };
  const checked = AssistantMessageSchema.safeParse(reply);
  if (!checked.success) throw invalid("reply", checked.error.issues);
  return { params, reply: cloneOrThrow(reply, "reply") as AssistantMessage };
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
