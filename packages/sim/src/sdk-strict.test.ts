// Rules of the real Messages API that the simulator once did not follow, checked through the real
// @anthropic-ai/sdk over real HTTP: what the SDK sends, the simulator must judge as the API does.
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sim, startSim } from "./server.js";

let sim: Sim;
let client: Anthropic;
beforeAll(async () => {
  sim = await startSim();
  client = new Anthropic({ apiKey: "sk-test", baseURL: sim.url, maxRetries: 0 });
});
afterAll(() => sim.close());

/** The SDK's error for a request the simulator refuses, after checking it is a 400 invalid_request_error. */
async function refused(request: Promise<unknown>): Promise<string> {
  const err = await request.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  const e = err as InstanceType<typeof Anthropic.BadRequestError>;
  expect(e.type).toBe("invalid_request_error");
  return (e.error as { error: { message: string } }).error.message;
}

describe("prefill (a last message from the assistant)", () => {
  // The migration guide (https://platform.claude.com/docs/en/about-claude/models/migration-guide):
  // "Prefilling assistant messages returns a 400 error on Claude 4.6 models"; the SDK's doc comment
  // on `messages`: "On models that don't support prefill, creating a message that ends with a
  // partial `assistant` response returns a 400 error."
  const PREFILL =
    "This model does not support assistant message prefill. The conversation must end with a user message.";
  const prefilled = (model: string, last: Anthropic.MessageParam) =>
    client.messages.create({
      model,
      max_tokens: 64,
      messages: [{ role: "user", content: "Answer in JSON." }, last],
    });

  it("is refused from Claude 4.6 on, in the API's words, whatever the turn holds", async () => {
    for (const model of ["claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-8", "claude-opus-5"]) {
      expect(await refused(prefilled(model, { role: "assistant", content: "{" }))).toBe(PREFILL);
    }
    const call: Anthropic.MessageParam = {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: {} }],
    };
    expect(await refused(prefilled("claude-sonnet-4-6", call))).toBe(PREFILL);
  });

  it("is accepted by the models before 4.6, and a conversation ending on the user is accepted by all", async () => {
    for (const model of ["claude-haiku-4-5", "claude-opus-4-1"]) {
      const reply = await prefilled(model, { role: "assistant", content: "{" });
      expect(reply.stop_reason).not.toBeNull();
    }
    const asked = await client.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 64,
      messages: [
        { role: "user", content: "Hi." },
        { role: "assistant", content: "Hello." },
        { role: "user", content: "Answer in JSON." },
      ],
    });
    expect(asked.role).toBe("assistant");
  });
});
