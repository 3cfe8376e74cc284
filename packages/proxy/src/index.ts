/**
 * A model API proxy (Anthropic Messages; OpenAI Chat Completions and Responses under `/openai`;
 * Gemini `generateContent` under `/gemini`) for
 * agents forkd did not write. It forwards every request and
 * response unchanged (streams chunk by chunk, headers, betas, errors, aborts) and remembers each agent
 * session's last turns, so that `forkd mcp` can fork a child from exactly the turn whose reply called
 * `fork`, and `forkd capture` can write turns as parent-turn files.
 *
 * @example
 * ```ts
 * import { startProxy } from "@forkd/proxy";
 *
 * const proxy = await startProxy({ upstream: "https://api.anthropic.com", port: 8787 });
 * // ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude …
 * const match = proxy.turns.findToolCall({ toolName: "fork", input: { directive: "Audit the codec" } });
 * ```
 * @module
 */
export { captureFileOf, turnCapture } from "./capture.js";
export { ChatAssembler, type ChatReply, type ChatToolCall } from "./chat-assembler.js";
export { ProxyError, type ProxyErrorCode, ProxyUnavailableError, StreamAssemblyError } from "./errors.js";
export { GeminiAssembler, type GeminiReply, geminiReplyOfJson } from "./gemini-assembler.js";
export { type AssembledBlock, type AssembledMessage, MessageAssembler } from "./message-assembler.js";
export { type FoundToolCall, ProxyClient, type ProxyEndpoint } from "./proxy-client.js";
export {
  CONTROL_PREFIX,
  DEFAULT_GEMINI_UPSTREAM,
  DEFAULT_OPENAI_UPSTREAM,
  DEFAULT_UPSTREAM,
  GEMINI_ROUTE,
  OPENAI_ROUTE,
  type ProxyOptions,
  type RunningProxy,
  startProxy,
  type TurnJson,
} from "./proxy-server.js";
export { proxyStatePath, readProxyState, removeProxyState, writeProxyState } from "./proxy-state.js";
export { forkPrefixOfTurn, type RecordedTurn } from "./recorded-turn.js";
export { ResponsesAssembler, type ResponsesItem } from "./responses-assembler.js";
export {
  geminiSessionKeyOf,
  MCP_INSTANCE_MARKER,
  mcpInstanceMarker,
  mcpInstancesOf,
  openAiSessionKeyOf,
  sessionKeyOf,
} from "./session-key.js";
export type { ReplyAssembler } from "./sse.js";
export {
  geminiModelOfPath,
  type ToolCall,
  TURN_APIS,
  type TurnApi,
  type TurnApiModule,
  type TurnReply,
  turnApi,
  turnApiOf,
} from "./turn-apis.js";
export {
  isToolNamed,
  type ProxyTurn,
  type ToolCallMatch,
  type ToolCallQuery,
  TurnStore,
  type TurnStoreLimits,
} from "./turn-store.js";
