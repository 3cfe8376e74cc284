import { describe, expect, it } from "vitest";
import {
  geminiSessionKeyOf,
  mcpInstanceMarker,
  mcpInstancesOf,
  openAiSessionKeyOf,
  sessionKeyOf,
} from "./session-key.js";

const BODY = { system: "You are Claude Code.", messages: [{ role: "user", content: "hi" }] };

describe("sessionKeyOf", () => {
  it("takes Claude Code's session header first, then metadata.user_id (JSON, then the older suffix)", () => {
    const metadata = {
      ...BODY,
      metadata: { user_id: JSON.stringify({ device_id: "d", session_id: "from-json" }) },
    };
    expect(sessionKeyOf({ "x-claude-code-session-id": "from-header" }, metadata)).toBe("cc:from-header");
    expect(sessionKeyOf({}, metadata)).toBe("cc:from-json");
    expect(sessionKeyOf({}, { ...BODY, metadata: { user_id: "user_abc_account__session_1234-abcd" } })).toBe(
      "cc:1234-abcd",
    );
  });

  it("gives each of Claude Code's sub-agents a session of its own within its parent's", () => {
    const parent = { "x-claude-code-session-id": "s1" };
    expect(sessionKeyOf({ ...parent, "x-claude-code-agent-id": "a7082fbc1752935d4" }, BODY)).toBe(
      "cc:s1/agent:a7082fbc1752935d4",
    );
    expect(sessionKeyOf({ ...parent, "x-claude-code-agent-id": "../x" }, BODY)).toBe("cc:s1");
    expect(
      sessionKeyOf({ "x-claude-code-agent-id": "a1" }, { ...BODY, metadata: { user_id: "u_session_s2" } }),
    ).toBe("cc:s2/agent:a1");
  });

  it("ignores a session id that is not a plain token", () => {
    expect(sessionKeyOf({ "x-claude-code-session-id": "../../etc" }, BODY)).toMatch(/^anon:/);
    expect(sessionKeyOf({ "x-claude-code-session-id": "a".repeat(129) }, BODY)).toMatch(/^anon:/);
    expect(sessionKeyOf({ "x-claude-code-session-id": "a".repeat(128) }, BODY)).toBe(`cc:${"a".repeat(128)}`);
  });

  it("keys other clients by credential, system prompt and first message", () => {
    const one = sessionKeyOf({ "x-api-key": "sk-1" }, BODY);
    expect(
      sessionKeyOf(
        { "x-api-key": "sk-1" },
        { ...BODY, messages: [...BODY.messages, { role: "assistant", content: "x" }] },
      ),
    ).toBe(one);
    expect(sessionKeyOf({ "x-api-key": "sk-2" }, BODY)).not.toBe(one);
    expect(sessionKeyOf({ "x-api-key": "sk-1" }, { ...BODY, system: "Other." })).not.toBe(one);
    expect(
      sessionKeyOf({ "x-api-key": "sk-1" }, { ...BODY, messages: [{ role: "user", content: "bye" }] }),
    ).not.toBe(one);
    expect(one).not.toContain("sk-1");
  });
});

describe("mcpInstancesOf", () => {
  it("finds each forkd mcp instance named in a tool description, once", () => {
    const id = "00112233445566778899";
    const tools = [
      { name: "mcp__forkd__fork", description: `Fork. ${mcpInstanceMarker(id)}` },
      { name: "mcp__forkd__fork_result", description: `Result. ${mcpInstanceMarker(id)}` },
      { name: "Read", description: "[forkd-mcp:short]" },
    ];
    expect(mcpInstancesOf({ tools })).toEqual([id]);
    expect(mcpInstancesOf({})).toEqual([]);
  });

  it("reads Chat Completions' function.description and the tools of a Responses namespace (Codex)", () => {
    const chat = "00112233445566778899";
    const codex = "aabbccddeeff00112233";
    expect(
      mcpInstancesOf({
        tools: [
          { type: "function", function: { name: "mcp__forkd__fork", description: mcpInstanceMarker(chat) } },
        ],
      }),
    ).toEqual([chat]);
    expect(
      mcpInstancesOf({
        tools: [
          { type: "function", name: "exec_command", description: "Runs a command." },
          {
            type: "namespace",
            name: "mcp__forkd",
            tools: [{ type: "function", name: "fork", description: `Fork. ${mcpInstanceMarker(codex)}` }],
          },
        ],
      }),
    ).toEqual([codex]);
  });
});

describe("openAiSessionKeyOf", () => {
  const auth = (key: string) => ({ authorization: `Bearer ${key}` });
  const CHAT = {
    model: "gpt-5",
    messages: [
      { role: "system", content: "You are Qwen Code." },
      { role: "user", content: "hi" },
    ],
  };

  it("keys the Codex CLI by its session-id header, and a sub-agent by its own thread-id", () => {
    const key = (headers: Record<string, string>) =>
      openAiSessionKeyOf(
        "openai-responses",
        { ...auth("sk-1"), ...headers },
        { input: [], prompt_cache_key: "k" },
      );
    expect(key({ "session-id": "019a-conv", "thread-id": "019a-conv" })).toBe("codex:019a-conv");
    expect(key({ "session-id": "019a-conv", "thread-id": "019b-sub" })).toBe(
      "codex:019a-conv/thread:019b-sub",
    );
    expect(key({ session_id: "019a-old" })).toBe("codex:019a-old");
    expect(key({ "session-id": "not a valid id" })).toMatch(/^pck:/);
  });

  it("keys a prompt_cache_key per credential, without either in the key", () => {
    const body = { ...CHAT, prompt_cache_key: "conv-1" };
    const one = openAiSessionKeyOf("openai-chat", auth("sk-1"), body);
    expect(one).toMatch(/^pck:[0-9a-f]{32}$/);
    expect(openAiSessionKeyOf("openai-chat", auth("sk-1"), { ...body, messages: [] })).toBe(one);
    expect(openAiSessionKeyOf("openai-chat", auth("sk-2"), body)).not.toBe(one);
    expect(openAiSessionKeyOf("openai-chat", auth("sk-1"), { ...body, prompt_cache_key: "conv-2" })).not.toBe(
      one,
    );
  });

  it("keys qwen-code (no session header) by credential, system messages and first message, stable as the conversation grows", () => {
    const one = openAiSessionKeyOf("openai-chat", auth("sk-1"), CHAT);
    expect(one).toMatch(/^anon:/);
    const grown = { ...CHAT, messages: [...CHAT.messages, { role: "assistant", content: "x" }] };
    expect(openAiSessionKeyOf("openai-chat", auth("sk-1"), grown)).toBe(one);
    expect(openAiSessionKeyOf("openai-chat", auth("sk-2"), CHAT)).not.toBe(one);
    const otherFirst = { ...CHAT, messages: [CHAT.messages[0], { role: "user", content: "bye" }] };
    expect(openAiSessionKeyOf("openai-chat", auth("sk-1"), otherFirst)).not.toBe(one);
    const otherSystem = { ...CHAT, messages: [{ role: "system", content: "Other." }, CHAT.messages[1]] };
    expect(openAiSessionKeyOf("openai-chat", auth("sk-1"), otherSystem)).not.toBe(one);
    expect(one).not.toContain("sk-1");
  });

  it("keys a Responses request without a session by its instructions and first input item", () => {
    const body = { instructions: "Be brief.", input: [{ role: "user", content: "hi" }] };
    const one = openAiSessionKeyOf("openai-responses", auth("sk-1"), body);
    expect(
      openAiSessionKeyOf("openai-responses", auth("sk-1"), {
        ...body,
        input: [...body.input, { type: "x" }],
      }),
    ).toBe(one);
    expect(
      openAiSessionKeyOf("openai-responses", auth("sk-1"), { ...body, instructions: "Other." }),
    ).not.toBe(one);
  });
});

describe("geminiSessionKeyOf", () => {
  // What the Gemini CLI 0.61 sends: its key in x-goog-api-key, an installation id (not a session's).
  const GEMINI = {
    systemInstruction: { parts: [{ text: "You are Gemini CLI." }] },
    contents: [{ role: "user", parts: [{ text: "<session_context>…</session_context> Audit the codec." }] }],
  };
  const PATH = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
  const cli = (key: string) => ({ "x-goog-api-key": key, "x-gemini-api-privileged-user-id": "install-1" });

  it("keys the Gemini CLI by credential, system instruction and first content, stable as the conversation grows", () => {
    const one = geminiSessionKeyOf(cli("AIza-1"), GEMINI, PATH);
    expect(one).toMatch(/^anon:[0-9a-f]{32}$/);
    const grown = { ...GEMINI, contents: [...GEMINI.contents, { role: "model", parts: [{ text: "x" }] }] };
    expect(geminiSessionKeyOf(cli("AIza-1"), grown, PATH)).toBe(one);
    expect(geminiSessionKeyOf(cli("AIza-2"), GEMINI, PATH)).not.toBe(one);
    const otherFirst = { ...GEMINI, contents: [{ role: "user", parts: [{ text: "bye" }] }] };
    expect(geminiSessionKeyOf(cli("AIza-1"), otherFirst, PATH)).not.toBe(one);
    const otherSystem = { ...GEMINI, systemInstruction: { parts: [{ text: "Other." }] } };
    expect(geminiSessionKeyOf(cli("AIza-1"), otherSystem, PATH)).not.toBe(one);
    // The installation id is the same for every session of one install: it keys nothing.
    expect(
      geminiSessionKeyOf({ ...cli("AIza-1"), "x-gemini-api-privileged-user-id": "install-2" }, GEMINI, PATH),
    ).toBe(one);
    expect(one).not.toContain("AIza-1");
  });

  it("reads the key from the ?key= parameter as from the header: one session either way", () => {
    const header = geminiSessionKeyOf(cli("AIza-1"), GEMINI, PATH);
    expect(geminiSessionKeyOf({}, GEMINI, `${PATH}&key=AIza-1`)).toBe(header);
    expect(geminiSessionKeyOf({}, GEMINI, `${PATH}&key=AIza-2`)).not.toBe(header);
  });

  it("finds the forkd mcp marker in a Gemini tool's functionDeclarations", () => {
    const tools = [
      {
        functionDeclarations: [
          { name: "read_file", description: "Reads." },
          { name: "mcp_forkd_fork", description: `Fork. ${mcpInstanceMarker("00112233445566778899")}` },
        ],
      },
      { googleSearch: {} },
    ];
    expect(mcpInstancesOf({ ...GEMINI, tools })).toEqual(["00112233445566778899"]);
  });
});
