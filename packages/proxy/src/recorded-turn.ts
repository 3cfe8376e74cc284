// The fork prefix of a turn the proxy recorded, in the turn's own API: what `forkd mcp` forks a
// tool call's children from, and what `forkd fork --from` reads from a file `forkd capture` wrote.
import { createForkPrefix, forkPrefixFromNative } from "@forkd/core";
import type { ForkPrefix, VerbatimValue } from "@forkd/protocol";
import type { AssembledMessage } from "./message-assembler.js";
import { geminiModelOfPath, type TurnApi, type TurnReply } from "./turn-apis.js";

/** What a recorded turn needs to be forked from. */
export interface RecordedTurn {
  api: TurnApi;
  /** The request's path: a Gemini call's names its model. */
  path: string;
  request: Record<string, unknown>;
  /** The reply as the API takes it back (see {@link TurnReply}). */
  response: TurnReply;
  /** The `anthropic-beta` names the request carried (an Anthropic turn's only). */
  betas: readonly string[];
  /** An Anthropic or OpenAI request's values in the agent's text, where JavaScript would write them differently. */
  verbatim?: readonly VerbatimValue[] | undefined;
}

/**
 * The request and reply exactly, as a fork prefix: an Anthropic turn with its betas; an OpenAI or
 * Gemini turn as a native prefix, the children's first bytes (a Gemini turn's model from its path).
 * @throws `InvalidPrefixError` from `@forkd/core` for a turn the core cannot read (a Gemini path that
 * names no model, for one).
 */
export function forkPrefixOfTurn(turn: RecordedTurn): ForkPrefix {
  if (turn.api === "anthropic") {
    const { content } = turn.response as AssembledMessage;
    const prefix = createForkPrefix(turn.request, { role: "assistant", content }, { betas: [...turn.betas] });
    if (turn.verbatim !== undefined && turn.verbatim.length > 0) prefix.verbatim = [...turn.verbatim];
    return prefix;
  }
  if (turn.api === "gemini") {
    const model = geminiModelOfPath(turn.path);
    return forkPrefixFromNative({
      api: "gemini",
      ...(model === undefined ? {} : { model }),
      request: turn.request,
      reply: [turn.response as Record<string, unknown>],
    });
  }
  // A Chat Completions reply is one assistant message; a Responses reply, its output items.
  const reply = turn.api === "openai-chat" ? [turn.response] : turn.response;
  return forkPrefixFromNative({
    api: turn.api,
    request: turn.request,
    reply: reply as Record<string, unknown>[],
    ...(turn.verbatim === undefined || turn.verbatim.length === 0 ? {} : { verbatim: [...turn.verbatim] }),
  });
}
