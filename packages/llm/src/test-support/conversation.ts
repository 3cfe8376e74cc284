// The conversation the provider clients' integration tests send: a system prompt of about `tokens`
// tokens, one Read tool, and a user turn ending with the simulator's script.
import type { LlmRequest } from "@forkd/core";

/** A conversation on `model` of about `tokens` tokens whose last user text is the simulator's script. */
export function reviewConversation(model: string, tokens: number, ...script: string[]): LlmRequest {
  return {
    model,
    max_tokens: 1024,
    system: `You are a careful reviewer. ${"Background paragraph about the codebase. ".repeat(Math.ceil((tokens * 4) / 41))}`,
    tools: [
      {
        name: "Read",
        description: "Reads a file",
        input_schema: { type: "object", properties: { file_path: { type: "string" } } },
      },
    ],
    messages: [{ role: "user", content: ["Review the codec.", ...script].join("\n") }],
  };
}
