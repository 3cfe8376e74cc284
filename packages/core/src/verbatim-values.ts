// The parent's exact text for the values of its request that a JavaScript reading cannot write back as sent.
//
// forkd reads a parent's request into JavaScript values and writes a child's request with
// JSON.stringify. For a parent in JavaScript that is the parent's own bytes; one in another language
// can send `1.0`, an integer past 2^53 or integer-like keys out of order, which JavaScript writes as
// `1`, another integer or in another order. A provider renders tool schemas and tool inputs as sent,
// so the child's prompt would leave the parent's at that element and miss the cache from there
// (docs/fork-semantics.md). The innermost object or array holding such a value travels in the prefix
// as its text (`ForkPrefix.verbatim`); the daemon ties each text to its object when it seals the
// prefix, and the request writer sends the text where it would have written the object. Tying the
// innermost object, not the whole tool or message, keeps the text found when the child's request
// copies a block around it (to move a cache breakpoint), and the texts short.
import type { CacheSafeParams, ForkPrefix, VerbatimValue } from "@forkd/protocol";
import { keptByJavaScript, parseJsonText, valuesJsonCannotKeep } from "@forkd/protocol/internal";
import { InvalidPrefixError } from "./errors.js";
import { isSealedValue, sealSharedPrefix } from "./shared-prefix.js";

// The text each tied object stands for; and the containers above one, which must be written member
// by member to reach it. Weak: nothing here keeps a prefix alive.
const verbatimTexts = new WeakMap<object, string>();
const holdersOfVerbatim = new WeakSet<object>();
// Prefixes whose texts were checked and tied: a daemon readies one prefix for each of its children.
const tiedPrefixes = new WeakSet<ForkPrefix>();

/** The APIs whose requests a daemon writes itself, so that it can send a value as the parent's text. */
export type VerbatimApi = "anthropic" | "openai-chat" | "openai-responses";

/** The fields of a request, in each such API, whose values a provider renders into the prompt. */
const PROMPT_FIELDS: Readonly<Record<VerbatimApi, ReadonlySet<string>>> = {
  anthropic: new Set(["tools", "system", "messages"]),
  "openai-chat": new Set(["tools", "messages"]),
  "openai-responses": new Set(["tools", "input", "instructions"]),
};

/** The value of `root` at `at`, and the containers above it (`root` first); undefined if absent. */
function resolve(root: object, at: VerbatimValue["at"]): { value: unknown; holders: object[] } | undefined {
  const holders: object[] = [];
  let value: unknown = root;
  for (const step of at) {
    if (typeof value !== "object" || value === null) return undefined;
    holders.push(value);
    if (typeof step === "number" ? !Array.isArray(value) : Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, step)) return undefined;
    value = (value as Record<string | number, unknown>)[step];
  }
  return { value, holders };
}

/** Whether `text` reads as the very value `target` is (the same JSON once both are written by JavaScript). */
function textIsValue(text: string, target: unknown): boolean {
  if (typeof target !== "object" || target === null) return false;
  try {
    return JSON.stringify(parseJsonText(text)) === JSON.stringify(target);
  } catch {
    return false;
  }
}

/**
 * The innermost objects and arrays of a request's prompt (`api`'s fields that reach it: a Messages
 * request's tools, system and messages) holding a value whose text in `requestText` (the body
 * `request` was read from) a JavaScript reading would write differently, with that text, for
 * `ForkPrefix.verbatim` (or a native prefix's); one whose text does not read as the value of
 * `request` at its place is left out. None at once for text a JavaScript reading keeps as it is
 * (`keptByJavaScript`: any JavaScript client's, ~0.07 ms at 48k tokens); another is walked whole
 * (about 1.3 ms).
 */
export function verbatimValuesOf(
  request: CacheSafeParams | Record<string, unknown>,
  requestText: string,
  api: VerbatimApi = "anthropic",
): VerbatimValue[] {
  if (keptByJavaScript(requestText)) return [];
  const fields = PROMPT_FIELDS[api];
  return valuesJsonCannotKeep(requestText, (field) => fields.has(field)).filter(({ at, text }) =>
    textIsValue(text, resolve(request, at)?.value),
  );
}

/** Checks each text against the value at its place in `root`; throws naming the first that is not. */
function checkTexts(root: object, texts: readonly VerbatimValue[], where: (string | number)[]) {
  return texts.map(({ at, text }) => {
    const found = resolve(root, at);
    if (found === undefined || !textIsValue(text, found.value)) {
      throw new InvalidPrefixError(
        `the verbatim text for ${[...where, ...at].join(".")} is not the value there: it must read as the same JSON`,
        { path: [...where.slice(0, -1), "verbatim", ...at] },
      );
    }
    return { ...found, text };
  });
}

/**
 * Readies a prefix a daemon decoded for its children's requests: ties each of `prefix.verbatim`'s
 * texts to its object in `prefix.params`, and each of a native prefix's to its object in its
 * `request` (see {@link stringifyWithVerbatim}), and seals the prefix
 * (`sealSharedPrefix`), since the request writer sends a text only in place of a sealed object.
 * A prefix without such texts is returned as it is; one already readied is not checked again.
 * @throws {@link InvalidPrefixError} when a text is not the value at its place: a prefix may come
 * from another parent, and a text standing in for a value must not say anything else.
 */
export function tieVerbatimTexts(prefix: ForkPrefix): ForkPrefix {
  const native = prefix.native;
  const none = (prefix.verbatim ?? []).length === 0 && (native?.verbatim ?? []).length === 0;
  if (none || tiedPrefixes.has(prefix)) return prefix;
  const ties = [
    ...checkTexts(prefix.params, prefix.verbatim ?? [], ["params"]),
    ...(native === undefined ? [] : checkTexts(native.request, native.verbatim ?? [], ["native", "request"])),
  ];
  // Only once every text is checked: a prefix refused for one ties none.
  for (const { value, holders, text } of ties) {
    verbatimTexts.set(value as object, text);
    for (const holder of holders) holdersOfVerbatim.add(holder);
  }
  tiedPrefixes.add(prefix);
  return isSealedValue(prefix) ? prefix : sealSharedPrefix(prefix);
}

// Whether a tied object is `value` or below it: a holder, or a copy the child made (not sealed) of
// something that holds one. A sealed object that holds none cannot reach one.
function reachesVerbatim(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (verbatimTexts.has(value) || holdersOfVerbatim.has(value)) return true;
  if (isSealedValue(value)) return false;
  return Object.values(value).some(reachesVerbatim);
}

/**
 * `JSON.stringify(value)`, but with the parent's exact text for every object below it tied to one
 * ({@link tieVerbatimTexts}), found through the child's own copies too. Plain JSON data only (what a
 * prefix decodes to, and the child's objects around it): no `toJSON` on the way to a tied object.
 */
export function stringifyWithVerbatim(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  const verbatim = verbatimTexts.get(value);
  if (verbatim !== undefined) return verbatim;
  if (!reachesVerbatim(value)) return JSON.stringify(value);
  // A member JSON.stringify leaves out (undefined, a function, a symbol) is null in an array.
  if (Array.isArray(value))
    return `[${value.map((member) => stringifyWithVerbatim(member) ?? "null").join(",")}]`;
  const members: string[] = [];
  for (const [key, member] of Object.entries(value)) {
    const text = stringifyWithVerbatim(member);
    if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${members.join(",")}}`;
}
