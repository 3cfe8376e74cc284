// Rules of the real Messages API that the simulator once did not follow, checked through the real
// @anthropic-ai/sdk over real HTTP: what the SDK sends, the simulator must judge as the API does.
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sim, startSim } from "./server.js";
import { EPHEMERAL, tokensOf } from "./test-support.js";

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

describe("cache pre-warming (max_tokens: 0)", () => {
  // The SDK's doc comment on `max_tokens`: "Set to `0` to populate the prompt cache without
  // generating a response"; anthropics/skills, skills/claude-api/shared/prompt-caching.md,
  // "Pre-warming the cache": it "returns immediately with `content: []`, `stop_reason:
  // "max_tokens"`", and is refused with `stream: true`, enabled thinking, `output_config.format`
  // or a forced `tool_choice`.
  const MODEL = "claude-sonnet-4-6";
  const system: Anthropic.TextBlockParam[] = [
    { type: "text", text: tokensOf(2000, "shared"), cache_control: EPHEMERAL },
  ];
  const tools: Anthropic.Tool[] = [{ name: "Read", input_schema: { type: "object" } }];
  const warm = {
    model: MODEL,
    max_tokens: 0,
    system,
    messages: [{ role: "user" as const, content: "warmup" }],
  };

  it("writes the cache and generates nothing, and the real request then reads it", async () => {
    const warmed = await client.messages.create(warm);
    expect(warmed.content).toEqual([]);
    expect(warmed.stop_reason).toBe("max_tokens");
    expect(warmed.usage.output_tokens).toBe(0);
    expect(warmed.usage.cache_creation_input_tokens).toBeGreaterThan(2000);
    const real = await client.messages.create({
      ...warm,
      max_tokens: 64,
      messages: [{ role: "user", content: "The real question." }],
    });
    expect(real.usage.cache_read_input_tokens).toBe(warmed.usage.cache_creation_input_tokens);
  });

  it("is refused with streaming, enabled thinking, a structured output or a forced tool choice", async () => {
    const cases: [Partial<Anthropic.MessageCreateParams>, string][] = [
      [{ stream: true }, "`stream: true`"],
      [{ thinking: { type: "enabled", budget_tokens: 1024 } }, '`thinking.type: "enabled"`'],
      [
        { output_config: { format: { type: "json_schema", schema: { type: "object" } } } },
        "`output_config.format`",
      ],
      [{ tools, tool_choice: { type: "any" } }, "`tool_choice` of type `any`"],
      [{ tools, tool_choice: { type: "tool", name: "Read" } }, "`tool_choice` of type `tool`"],
    ];
    for (const [extra, what] of cases) {
      const body = { ...warm, ...extra } as Anthropic.MessageCreateParamsNonStreaming;
      expect(await refused(client.messages.create(body))).toBe(
        `max_tokens: \`max_tokens: 0\` cannot be used with ${what}`,
      );
    }
    // Adaptive thinking, tools left to the model, and no output format are not among the refusals.
    const accepted = await client.messages.create({
      ...warm,
      thinking: { type: "adaptive" },
      tools,
      tool_choice: { type: "auto" },
    });
    expect(accepted.content).toEqual([]);
    expect(await refused(client.messages.create({ ...warm, max_tokens: -1 }))).toBe(
      "max_tokens: Input should be greater than or equal to 0",
    );
  });
});

describe("system messages (mid-conversation, per-turn-control beta)", () => {
  // The SDK's BetaSystemMessageParam: `content` is optional and may hold `tool_addition` and
  // `tool_removal` blocks; of its `output_config`: "An empty `{}` is accepted on a message that
  // carries content; a message with neither content nor output_config fields is rejected." Claude
  // Code 2.1 sends `{role: "system", content: [], output_config: {effort}}` and tool changes.
  const betas = ["per-turn-control-2026-07-01"];
  const ask = (system: Anthropic.Beta.BetaSystemMessageParam) =>
    client.beta.messages.create({
      model: "claude-opus-4-8",
      max_tokens: 64,
      betas,
      tools: [{ name: "Read", input_schema: { type: "object" } }],
      messages: [{ role: "user", content: "Go on." }, system],
    });

  it("may carry per-turn settings alone, and not nothing at all", async () => {
    expect((await ask({ role: "system", content: [], output_config: { effort: "low" } })).role).toBe(
      "assistant",
    );
    expect((await ask({ role: "system", output_config: { effort: "high" } })).role).toBe("assistant");
    expect(await refused(ask({ role: "system", content: [] }))).toBe(
      "messages.1.content: List should have at least 1 item",
    );
    expect(await refused(ask({ role: "system", content: [], output_config: {} }))).toBe(
      "messages.1.content: List should have at least 1 item",
    );
    expect(await refused(ask({ role: "system", output_config: { effort: null } }))).toBe(
      "messages.1.content: Field required",
    );
  });

  it("may add and remove tools mid-conversation, checked like other blocks", async () => {
    const added: Anthropic.Beta.BetaSystemMessageParam = {
      role: "system",
      content: [
        { type: "text", text: "A tool changes." },
        {
          type: "tool_addition",
          tool: { type: "tool_definition", definition: { name: "Grep", input_schema: { type: "object" } } },
        },
        { type: "tool_removal", tool: { type: "tool_reference", name: "Read" }, cache_control: EPHEMERAL },
      ],
    };
    expect((await ask(added)).role).toBe("assistant");
    const extra = { type: "tool_removal", tool: { type: "tool_reference", name: "Read" }, why: "old" };
    expect(
      await refused(
        ask({ role: "system", content: [extra] } as unknown as Anthropic.Beta.BetaSystemMessageParam),
      ),
    ).toBe("messages.1.content.0.why: Extra inputs are not permitted");
    const nameless = { type: "tool_removal" };
    expect(
      await refused(
        ask({ role: "system", content: [nameless] } as unknown as Anthropic.Beta.BetaSystemMessageParam),
      ),
    ).toBe("messages.1.content.0.tool: Field required");
    const image = { type: "image", source: { type: "url", url: "https://example.com/a.png" } };
    expect(
      await refused(
        ask({ role: "system", content: [image] } as unknown as Anthropic.Beta.BetaSystemMessageParam),
      ),
    ).toBe("messages.1.content.0.type: Input should be 'text', 'tool_addition' or 'tool_removal'");
  });
});

describe("cache_control TTLs", () => {
  const MODEL = "claude-sonnet-4-6";
  const HOUR = { type: "ephemeral" as const, ttl: "1h" as const };
  const FIVE = { type: "ephemeral" as const, ttl: "5m" as const };
  const question = (cache_control?: Anthropic.CacheControlEphemeral): Anthropic.MessageParam => ({
    role: "user",
    content: [{ type: "text", text: "The question.", ...(cache_control ? { cache_control } : {}) }],
  });

  it("refuses automatic caching whose target block has a marker of another TTL, in the API's words", async () => {
    // vellum-ai/vellum-assistant#23414 quotes the message; anthropics/skills,
    // skills/claude-api/shared/prompt-caching.md: automatic caching's documented 400s include "an
    // explicit marker on the last block whose TTL differs from the top-level field's (an explicit
    // marker there with the same TTL makes automatic caching a no-op)".
    const ask = (top: Anthropic.CacheControlEphemeral, last: Anthropic.CacheControlEphemeral) =>
      client.messages.create({
        model: MODEL,
        max_tokens: 16,
        cache_control: top,
        messages: [question(last)],
      });
    expect(await refused(ask(FIVE, HOUR))).toBe(
      "Top-level cache_control has ttl='5m' but the target block already has cache_control with ttl='1h'",
    );
    expect(await refused(ask(HOUR, { type: "ephemeral" }))).toBe(
      "Top-level cache_control has ttl='1h' but the target block already has cache_control with ttl='5m'",
    );
    expect((await ask(HOUR, HOUR)).role).toBe("assistant");
    expect((await ask({ type: "ephemeral" }, FIVE)).role).toBe("assistant");
  });

  it("refuses a 1-hour block after a 5-minute one at the 1-hour block's path, in the API's words", async () => {
    // cnighswonger/claude-code-cache-fix#44 quotes the message.
    const ORDER =
      ".cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. " +
      "Note that blocks are processed in the following order: `tools`, `system`, `messages`.";
    const system: Anthropic.TextBlockParam[] = [{ type: "text", text: "Be brief.", cache_control: FIVE }];
    const later = client.messages.create({
      model: MODEL,
      max_tokens: 16,
      system,
      messages: [{ role: "user", content: "Hi." }, { role: "assistant", content: "Hello." }, question(HOUR)],
    });
    expect(await refused(later)).toBe(`messages.2.content.0${ORDER}`);
    const tools: Anthropic.Tool[] = [
      { name: "Read", input_schema: { type: "object" }, cache_control: FIVE },
      { name: "Grep", input_schema: { type: "object" }, cache_control: HOUR },
    ];
    const tool = client.messages.create({ model: MODEL, max_tokens: 16, tools, messages: [question()] });
    expect(await refused(tool)).toBe(`tools.1${ORDER}`);
  });
});

describe("sampling parameters (temperature, top_p, top_k)", () => {
  // No longer in the SDK's request types, but the API takes them on the models before Opus 4.7, and
  // Claude Code 2.1 still sends `temperature` there (its API-key check sends `temperature: 1`); the
  // SDK sends a field its types lack as given. From Opus 4.7 on they are refused: anthropics/skills,
  // skills/claude-api/shared/error-codes.md ("`temperature`, `top_p`, `top_k` are removed - sending
  // any of them returns 400"), in the API's words as UKGovernmentBEIS/inspect_ai#3721 quotes them.
  // On the 4.5 and 4.6 models, not both `temperature` and `top_p` (Vali-98/ChatterUI#564).
  const ask = (model: string, sampling: Record<string, unknown>) =>
    client.messages.create({
      model,
      max_tokens: 16,
      messages: [{ role: "user", content: "Hi." }],
      ...sampling,
    } as Anthropic.MessageCreateParamsNonStreaming);

  it("are accepted where the API takes them, as Claude Code sends them", async () => {
    expect((await ask("claude-sonnet-4-6", { temperature: 1 })).role).toBe("assistant");
    expect((await ask("claude-haiku-4-5", { temperature: 0, top_k: 40 })).role).toBe("assistant");
    expect((await ask("claude-sonnet-4-5", { top_p: 0.9 })).role).toBe("assistant");
    // The default temperature is not a change on a model that removed the parameter.
    expect((await ask("claude-opus-4-7", { temperature: 1 })).role).toBe("assistant");
  });

  it("are refused from Opus 4.7 on, and temperature with top_p on the 4.5 and 4.6 models", async () => {
    expect(await refused(ask("claude-opus-4-7", { temperature: 0.2 }))).toBe(
      "`temperature` is deprecated for this model.",
    );
    expect(await refused(ask("claude-opus-4-8", { top_p: 0.9 }))).toBe(
      "`top_p` is deprecated for this model.",
    );
    expect(await refused(ask("claude-opus-5", { top_k: 5 }))).toBe("`top_k` is deprecated for this model.");
    expect(await refused(ask("claude-sonnet-4-6", { temperature: 0.5, top_p: 0.9 }))).toBe(
      "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
    );
  });

  it("are held to their ranges", async () => {
    expect(await refused(ask("claude-sonnet-4-6", { temperature: 1.5 }))).toBe(
      "temperature: Input should be less than or equal to 1",
    );
    expect(await refused(ask("claude-sonnet-4-6", { top_p: -0.1 }))).toBe(
      "top_p: Input should be greater than or equal to 0",
    );
    expect(await refused(ask("claude-sonnet-4-6", { top_k: 2.5 }))).toBe(
      "top_k: Input should be a valid integer",
    );
    expect(await refused(ask("claude-sonnet-4-6", { temperature: "hot" }))).toBe(
      "temperature: Input should be a valid number",
    );
  });
});

describe("a custom tool's input_schema", () => {
  // The SDK's BetaTool.InputSchema has `type: 'object'`; the API's refusals name the tool's kind,
  // `custom`, in their path (mnfst/llm-gateway#1886, lidge-jun/opencodex#75, Hmbown/Codewhale#4329).
  const ask = (input_schema: unknown) =>
    client.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 16,
      tools: [
        { name: "Read", input_schema: { type: "object" } },
        { name: "Browse", input_schema } as Anthropic.Tool,
      ],
      messages: [{ role: "user", content: "Hi." }],
    });

  it("needs type object at its top, as MCP and OpenAI-shaped schemas sometimes lack", async () => {
    expect(await refused(ask({ properties: { url: { type: "string" } } }))).toBe(
      "tools.1.custom.input_schema.type: Field required",
    );
    expect(await refused(ask({ type: "string" }))).toBe(
      "tools.1.custom.input_schema.type: Input should be 'object'",
    );
    expect(await refused(ask(undefined))).toBe("tools.1.custom.input_schema: Field required");
    expect(await refused(ask("object"))).toBe(
      "tools.1.custom.input_schema: Input should be a valid dictionary",
    );
    expect(
      await refused(ask({ type: "object", anyOf: [{ required: ["url"] }, { required: ["query"] }] })),
    ).toBe(
      "tools.1.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level",
    );
    const nested = {
      type: "object",
      properties: { target: { anyOf: [{ type: "string" }, { type: "number" }] } },
    };
    expect((await ask(nested)).role).toBe("assistant");
  });
});

describe("context_management", () => {
  // A field of the SDK's beta Messages params only; the API refuses it without its beta, in its
  // unknown-field words (Wei-Shaw/sub2api#2833, ericc-ch/copilot-api#217, anthropics/claude-code#14135).
  const params = {
    model: "claude-sonnet-4-6",
    max_tokens: 16,
    context_management: { edits: [{ type: "clear_thinking_20251015" as const, keep: "all" as const }] },
    thinking: { type: "adaptive" as const },
    messages: [{ role: "user" as const, content: "Hi." }],
  };

  it("needs its beta, as the API does", async () => {
    expect(await refused(client.beta.messages.create(params))).toBe(
      "context_management: Extra inputs are not permitted",
    );
    expect(
      await refused(client.beta.messages.create({ ...params, betas: ["interleaved-thinking-2025-05-14"] })),
    ).toBe("context_management: Extra inputs are not permitted");
    for (const beta of ["context-management-2025-06-27", "compact-2026-01-12"]) {
      expect((await client.beta.messages.create({ ...params, betas: [beta] })).role).toBe("assistant");
    }
  });
});

describe("service_tier and speed", () => {
  // The SDK's types: `service_tier?: 'auto' | 'standard_only'`, `speed?: 'standard' | 'fast' | null`.
  const ask = (extra: Record<string, unknown>) =>
    client.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 16,
      messages: [{ role: "user", content: "Hi." }],
      ...extra,
    } as Anthropic.MessageCreateParamsNonStreaming);

  it("take only the values the SDK types, not OpenAI's", async () => {
    for (const service_tier of ["auto", "standard_only"])
      expect((await ask({ service_tier })).role).toBe("assistant");
    for (const speed of ["standard", "fast", null]) expect((await ask({ speed })).role).toBe("assistant");
    for (const service_tier of ["default", "priority", "flex"]) {
      expect(await refused(ask({ service_tier }))).toBe(
        "service_tier: Input should be 'auto' or 'standard_only'",
      );
    }
    expect(await refused(ask({ speed: "turbo" }))).toBe("speed: Input should be 'standard' or 'fast'");
  });
});
