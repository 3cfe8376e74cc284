// A stand-in for V8's escaped-key bug (see json-text.ts) on the Node lines that do not have it, so
// that routing around it is tested everywhere and not only where CI runs Node 24.

/** What {@link withNativeParseWatched} saw: the callback's result and every text JSON.parse got. */
export interface WatchedParse<T> {
  result: T;
  nativeTexts: string[];
}

/**
 * Runs `fn` with `JSON.parse` replaced by one that records its texts and refuses an object or array
 * text with a backslash in it, the texts V8 may misread. Give it texts whose only escapes are in keys
 * to prove they never reach the native parser; lone strings still parse natively, as the reader needs.
 */
export function withNativeParseWatched<T>(fn: () => T): WatchedParse<T> {
  const native = JSON.parse;
  const nativeTexts: string[] = [];
  JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    nativeTexts.push(text);
    if (/^\s*[[{]/.test(text) && text.includes("\\")) {
      throw new Error(`an object text with an escape reached the native parser: ${text.slice(0, 80)}`);
    }
    return native(text, reviver);
  }) as typeof JSON.parse;
  try {
    return { result: fn(), nativeTexts };
  } finally {
    JSON.parse = native;
  }
}
