// The elements of an OpenAI request's prompt whose text a JavaScript reading would write differently
// from the client, and the identities the prompt cache gives them (openai-cache.ts).
//
// As on the Messages route (verbatim.ts), the provider renders what the client sent: a tool's
// parameters with `"default": 1.0`, digits past 2^53, integer-like keys after others, are part of the
// prompt as written. The simulator renders the prompt from the JavaScript reading of the body, which
// writes `1`, other digits and `{"2":0,"b":1}`; so an element holding such a value is keyed on its text
// too. The values come from `valuesJsonCannotKeep`, run only for a body the parse found not to be
// JavaScript's writing (exchange.ts, `parseJsonWithUnkept`): the innermost objects and arrays that
// hold one, each with its exact text. Each is placed by the first steps of its path in the element
// that the cache layout keys: `tools[i]`, `messages[i]` / `input[i]`, and a content part
// (`content[j]`, or a tool output's `output[j]`) where the layout has parts (the breakpoint cache of
// the GPT-5.6 family; the prefix cache before it keys a whole message). An element's identity is the
// SHA-256 of its holders' paths and texts, as the provider reads them (whitespace outside strings
// dropped, strings as JSON.stringify writes them, a part's own `prompt_cache_breakpoint` left out).
// Together with the JavaScript reading, which the layout renders already, these texts make the
// element's whole text: two writings of an element share an identity exactly when the provider sees
// the same text.
import { createHash } from "node:crypto";
import type { UnkeptValueText } from "@forkd/protocol/internal";
import { promptTextOfElement } from "../verbatim.js";

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

/** One holder of values JavaScript cannot keep, in the words of the identity. */
export interface Holder {
  /** The content part it is in (`content` or `output`, and the part's index), if any. */
  part?: { field: string; index: number };
  /** Its path and prompt text. */
  entry: string;
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
    const prompt = promptTextOfElement(text, isPart && at.length === 4 ? "prompt_cache_breakpoint" : null);
    const holder: Holder = { entry: `${JSON.stringify(at)}\u0000${prompt}` };
    if (isPart) holder.part = { field: inner, index: partIndex };
    const holders = byElement.get(element);
    if (holders === undefined) byElement.set(element, [holder]);
    else holders.push(holder);
  }
  return verbatim.tools.size === 0 && verbatim.items.size === 0 ? undefined : verbatim;
}

/** The identity of the text of these holders: the SHA-256 of their paths and prompt texts. */
export function identityOf(holders: readonly Holder[]): string {
  const hash = createHash("sha256");
  for (const { entry } of holders) hash.update(`${entry}\u0001`);
  return hash.digest("base64url");
}

/** The identity of the holders `holders` that `keep` selects; undefined when it selects none. */
export function identityOfSome(
  holders: readonly Holder[] | undefined,
  keep: (holder: Holder) => boolean = () => true,
): string | undefined {
  const kept = holders?.filter(keep) ?? [];
  return kept.length === 0 ? undefined : identityOf(kept);
}
