/** Fork semantics on OpenAI's APIs: the formats, native parents, and the prompt cache key. */

export type { ChatMessage } from "./chat-format.js";
export {
  chatAssistantToCanonical,
  chatRequestToCanonical,
  renderChatMessages,
  renderChatRequest,
} from "./chat-format.js";
export { OPENAI_ARGUMENTS_FIELD, OPENAI_ITEM_BLOCK, OPENAI_NAMESPACE_FIELD } from "./content.js";
export {
  chatReplyForRequest,
  forkPrefixFromNative,
  nativeMessageCount,
  renderNativeChildRequest,
} from "./native-prefix.js";
export {
  derivedPromptCacheKey,
  PROMPT_CACHE_KEY_RATE_PER_MINUTE,
  promptCacheShard,
} from "./prompt-cache-key.js";
export type { ResponsesItem } from "./responses-format.js";
export {
  renderResponsesItems,
  renderResponsesRequest,
  responsesItemsToAssistant,
  responsesRequestToCanonical,
} from "./responses-format.js";
