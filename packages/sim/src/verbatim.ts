/**
 * Prompt elements whose text a JavaScript reading would not write back as sent, and the identity the
 * prompt cache gives them, on every route that renders the client's text (Messages, and OpenAI's two
 * APIs in openai/openai-verbatim.ts).
 *
 * The provider renders a tool's definition and a tool call's input into the prompt as the client
 * wrote them: `1.0` stays `1.0`, `12345678901234567890` keeps its digits, `{"b":1,"2":0}` keeps its
 * key order. JavaScript reads these as `1`, `12345678901234567000` and `{"2":0,"b":1}`, so a request
 * written from a JavaScript reading of another's (a fork child of a Python parent) has a different
 * prompt from that element on, and misses the cache there. The simulator parses bodies with
 * JavaScript too, so the value it keys its cache on cannot tell the two apart; for an element that
 * holds such values, the key also takes in their text. They come from `valuesJsonCannotKeep`, run
 * only for a body that is not JSON.stringify's writing of its value (json-bytes.ts, `Fidelity`): the
 * innermost objects and arrays holding one, each a {@link Holder} of the element it is in. With the
 * JavaScript reading, which the layout renders already, their texts make the element's whole text:
 * two writings of an element share an identity exactly when the provider sees the same text.
 *
 * The text is taken as the provider reads it, not byte for byte: whitespace outside strings is
 * dropped and each string is written as JSON.stringify writes it (`"\u00e9"` is `"é"`), since the
 * provider parses the body and neither reaches the prompt; so is an element's own breakpoint member
 * (`cache_control`, OpenAI's `prompt_cache_breakpoint`), which places a breakpoint and is not
 * rendered (a fork moves its breakpoints and still hits).
 */
import { createHash } from "node:crypto";
import type { UnkeptValueText } from "@forkd/protocol/internal";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/** Ends a run of a number or literal (`true`, `false`, `null`) or a colon. */
function endsRun(code: number): boolean {
  return (
    Number.isNaN(code) ||
    isWhitespace(code) ||
    code === QUOTE ||
    code === COMMA ||
    code === OPEN_BRACE ||
    code === CLOSE_BRACE ||
    code === OPEN_BRACKET ||
    code === CLOSE_BRACKET
  );
}

/** The index just past the string whose opening quote is at `at`. */
function stringEnd(text: string, at: number): number {
  let i = at + 1;
  for (;;) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) return i + 1;
    if (Number.isNaN(code)) throw new SyntaxError("unterminated string");
    i += code === BACKSLASH ? 2 : 1;
  }
}

/**
 * What of an element's JSON text (valid JSON, as a request body held it) reaches the prompt: the text
 * without whitespace outside strings, each string as JSON.stringify writes it, and without the
 * element's own top-level `cache_control` member (`omit`: the member left out, none for null;
 * the OpenAI routes leave out a content part's `prompt_cache_breakpoint`). Numbers and key order stay
 * as written.
 */
export function promptTextOfElement(text: string, omit: string | null = "cache_control"): string {
  const omitted = omit === null ? undefined : JSON.stringify(omit);
  // Members of a top-level object are gathered one by one, so that one can be left out.
  let members = "";
  let member = "";
  let dropMember = false;
  let depth = 0;
  let topObject = false;
  let atKey = false;
  const endMember = (): void => {
    if (!dropMember) members += members === "" ? member : `,${member}`;
    member = "";
    dropMember = false;
  };
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (isWhitespace(code)) {
      i++;
    } else if (code === QUOTE) {
      const end = stringEnd(text, i);
      let string = text.slice(i, end);
      // A string without a backslash is already as JSON.stringify writes it: JSON allows no raw
      // control characters in one, and UTF-8 decoding leaves no lone surrogate.
      if (string.includes("\\")) string = JSON.stringify(JSON.parse(string) as string);
      if (atKey) {
        dropMember = string === omitted;
        atKey = false;
      }
      member += string;
      i = end;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (depth === 0 && code === OPEN_BRACE) {
        topObject = true;
        atKey = true;
      } else {
        member += text[i];
      }
      depth++;
      i++;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
      if (depth === 0 && topObject) {
        if (member !== "") endMember();
      } else {
        member += text[i];
      }
      i++;
    } else if (code === COMMA && depth === 1 && topObject) {
      endMember();
      atKey = true;
      i++;
    } else {
      // A comma below the top, a colon, or a number or literal: copied up to where it ends.
      let end = i + 1;
      if (code !== COMMA) while (!endsRun(text.charCodeAt(end))) end++;
      member += text.slice(i, end);
      i = end;
    }
  }
  return topObject ? `{${members}}` : member;
}

/** A holder of values JavaScript cannot keep, in the words of its element's identity. */
export interface Holder {
  /** The content part it is in (`content` or `output`, and the part's index), if any. */
  part?: { field: string; index: number };
  /** Its path and prompt text. */
  entry: string;
}

/**
 * The holder `at` (a path from the top of the body) with its `text`: its prompt text leaves out
 * `omit`, the member that places a breakpoint, when the holder is the element that carries one.
 */
export function holderOf(at: readonly (string | number)[], text: string, omit: string | null): Holder {
  return { entry: `${JSON.stringify(at)}\u0000${promptTextOfElement(text, omit)}` };
}

/** Adds `holder` to those of `element`. */
export function addHolder<K>(byElement: Map<K, Holder[]>, element: K, holder: Holder): void {
  const holders = byElement.get(element);
  if (holders === undefined) byElement.set(element, [holder]);
  else holders.push(holder);
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

/** The top-level fields of a Messages request whose values the prompt renders as sent, and their elements' letters. */
const ELEMENT_LETTERS: ReadonlyMap<string, "t" | "s" | "m"> = new Map([
  ["tools", "t"],
  ["system", "s"],
  ["messages", "m"],
]);

/** Whether a Messages request's top-level field `topKey` is one the prompt renders as sent. */
export function inMessagesPrompt(topKey: string): boolean {
  return ELEMENT_LETTERS.has(topKey);
}

/**
 * The identities of a Messages request's elements that hold values JavaScript cannot keep (`unkept`,
 * `valuesJsonCannotKeep` of its body under {@link inMessagesPrompt}), by where they sit in the prompt
 * layout: `t<i>` for tool i, `s<i>` for system block i, `m<i>` for message i and `m<i>.<j>` for its
 * content block j. A holder inside a content block belongs to the block, any other in a message to
 * the message.
 */
export function verbatimIdentities(unkept: readonly UnkeptValueText[]): Map<string, string> {
  const byElement = new Map<string, Holder[]>();
  for (const { at, text } of unkept) {
    const [field, index, inner, block] = at;
    const letter = typeof field === "string" ? ELEMENT_LETTERS.get(field) : undefined;
    // Not an array of elements of the prompt: a request the API refuses, or a field it does not render.
    if (letter === undefined || typeof index !== "number") continue;
    const inBlock = letter === "m" && inner === "content" && typeof block === "number";
    const element = inBlock ? `m${index}.${block}` : `${letter}${index}`;
    const ownBreakpoint = at.length === (inBlock ? 4 : 2) ? "cache_control" : null;
    addHolder(byElement, element, holderOf(at, text, ownBreakpoint));
  }
  return new Map([...byElement].map(([element, holders]) => [element, identityOf(holders)]));
}
