// The elements of an OpenAI request's prompt whose text a JavaScript reading would write differently
// from the client, by element, for the identities the prompt cache gives them (openai-cache.ts); the
// holders and their identities are the Messages route's (verbatim.ts). Each holder is placed by the
// first steps of its path in the element that the cache layout keys: `tools[i]`, `messages[i]` /
// `input[i]`, and a content part (`content[j]`, or a tool output's `output[j]`) where the layout has
// parts (the breakpoint cache of the GPT-5.6 family; the prefix cache before it keys a whole
// message). A part's own `prompt_cache_breakpoint` is left out of its text.
import type { UnkeptValueText } from "@forkd/protocol/internal";
import { addHolder, type Holder, holderOf } from "../verbatim.js";

/** The OpenAI APIs the simulator serves. */
export type OpenAiApi = "chat" | "responses";

/** The field of a request that lists its messages or input items. */
export function itemsFieldOf(api: OpenAiApi): "messages" | "input" {
  return api === "chat" ? "messages" : "input";
}

/** The top-level fields whose values the prompt renders as sent (`instructions` is a string). */
export function promptFieldOf(api: OpenAiApi): (topKey: string) => boolean {
  const items = itemsFieldOf(api);
  return (topKey) => topKey === "tools" || topKey === items;
}

/**
 * A request's holders of values JavaScript cannot keep, by the element they are in. Index -1 stands
 * for the field itself (a value right in its array, which no valid request has: kept to be safe).
 */
export interface OpenAiVerbatim {
  tools: Map<number, Holder[]>;
  items: Map<number, Holder[]>;
}

function isPartField(step: unknown): step is "content" | "output" {
  return step === "content" || step === "output";
}

/** The holders of `unkept` (`valuesJsonCannotKeep` of a request body) by element; undefined for none. */
export function openAiVerbatimOf(
  api: OpenAiApi,
  unkept: readonly UnkeptValueText[],
): OpenAiVerbatim | undefined {
  const itemsField = itemsFieldOf(api);
  const verbatim: OpenAiVerbatim = { tools: new Map(), items: new Map() };
  for (const { at, text } of unkept) {
    const [field, index, inner, partIndex] = at;
    const byElement = field === "tools" ? verbatim.tools : field === itemsField ? verbatim.items : undefined;
    if (byElement === undefined) continue;
    const element = typeof index === "number" ? index : -1;
    const isPart = element >= 0 && isPartField(inner) && typeof partIndex === "number";
    // A part's own breakpoint marker places a breakpoint; it is not rendered.
    const holder = holderOf(at, text, isPart && at.length === 4 ? "prompt_cache_breakpoint" : null);
    if (isPart) holder.part = { field: inner, index: partIndex };
    addHolder(byElement, element, holder);
  }
  return verbatim.tools.size === 0 && verbatim.items.size === 0 ? undefined : verbatim;
}
