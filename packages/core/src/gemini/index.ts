/** Fork semantics on Gemini's generateContent API: the format, native parents, the explicit cache. */

export {
  GEMINI_CACHE_DISPLAY_PREFIX,
  GEMINI_CACHE_RENEW_BELOW_SECONDS,
  GEMINI_CACHE_TTL_SECONDS,
  geminiCacheDisplayName,
} from "./cache-name.js";
export type { GeminiCachedPrefix, GeminiPrefixSource } from "./child-request.js";
export {
  geminiCachedPrefix,
  geminiForkPrefixFromNative,
  geminiSharedMessageCount,
  renderGeminiChildRequest,
} from "./child-request.js";
export type { GeminiContent, GeminiPart } from "./format.js";
export {
  GEMINI_PART_BLOCK,
  GEMINI_PART_FIELD,
  GEMINI_SETTINGS_FIELDS,
  geminiModelToAssistant,
  geminiRequestToCanonical,
  renderGeminiContents,
  renderGeminiRequest,
} from "./format.js";
