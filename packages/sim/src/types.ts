/**
 * The subset of Anthropic's Messages API types the simulator reads and writes. Requests are
 * validated into these shapes by `validate.ts`; fields the simulator does not interpret are kept
 * as `unknown`.
 */
import type { ResponseDiagnostics } from "./cache-diagnostics.js";

/** `cache_control` on a block or at the top level of a request. */
export interface CacheControl {
  type: "ephemeral";
  /** @default "5m" */
  ttl?: "5m" | "1h";
}

/** Cache TTLs Anthropic offers. */
export type CacheTtl = "5m" | "1h";

export interface TextBlock {
  type: "text";
  text: string;
  cache_control?: CacheControl | null;
  citations?: unknown;
}

export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
  cache_control?: CacheControl | null;
}

export interface ToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content?: string | ContentBlock[];
  is_error?: boolean;
  cache_control?: CacheControl | null;
}

export interface ThinkingBlock {
  type: "thinking";
  thinking: string;
  signature: string;
  cache_control?: CacheControl | null;
}

export interface RedactedThinkingBlock {
  type: "redacted_thinking";
  data: string;
  cache_control?: CacheControl | null;
}

/** Any other block type (image, document, search_result, server tool blocks…): counted by its JSON. */
export interface OtherBlock {
  type: string;
  cache_control?: CacheControl | null;
  [key: string]: unknown;
}

export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock;

export interface Message {
  role: "user" | "assistant" | "system";
  /** Absent only on a `system` message that carries `output_config` alone (validate.ts). */
  content?: string | Array<ContentBlock | OtherBlock>;
}

export interface ToolDefinition {
  name: string;
  description?: string;
  input_schema?: unknown;
  type?: string;
  cache_control?: CacheControl | null;
  [key: string]: unknown;
}

export type ToolChoice =
  | { type: "auto"; disable_parallel_tool_use?: boolean }
  | { type: "any"; disable_parallel_tool_use?: boolean }
  | { type: "tool"; name: string; disable_parallel_tool_use?: boolean }
  | { type: "none" };

export type ThinkingConfig =
  | { type: "enabled"; budget_tokens: number }
  | { type: "disabled" }
  | { type: "adaptive" };

/** A validated `POST /v1/messages` (or count_tokens) body. */
export interface MessagesRequest {
  model: string;
  /** Absent only for count_tokens. */
  max_tokens?: number;
  messages: Message[];
  system?: string | TextBlock[];
  tools?: ToolDefinition[];
  tool_choice?: ToolChoice;
  thinking?: ThinkingConfig;
  stream?: boolean;
  stop_sequences?: string[];
  cache_control?: CacheControl;
  [key: string]: unknown;
}

/** `usage.cache_creation` as Anthropic reports it. */
export interface CacheCreationUsage {
  ephemeral_5m_input_tokens: number;
  ephemeral_1h_input_tokens: number;
}

/** The input side of `usage`: `input_tokens + cache_creation_input_tokens + cache_read_input_tokens` is the whole prompt. */
export interface InputUsage {
  /** Tokens after the last cache breakpoint plus anything not cached. */
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: CacheCreationUsage;
}

/** `usage` of a response. */
export interface Usage extends InputUsage {
  output_tokens: number;
  service_tier: "standard";
}

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "pause_turn" | "refusal";

/** A content block of a response. */
export type OutputBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "tool_use"; id: string; name: string; input: unknown };

/** A non-streaming response body. */
export interface MessageResponse {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: OutputBlock[];
  stop_reason: StopReason;
  stop_sequence: string | null;
  usage: Usage;
  /** Present when the request carried `diagnostics` (cache-diagnostics.ts). */
  diagnostics?: ResponseDiagnostics;
}
