// Real OpenAI-API agents from npm as the parent: qwen-code (Chat Completions) and the Codex CLI
// (Responses) run a turn against the strict simulator; that turn, read back from the simulator's
// log, is forked onto daemons over NATS. Every child must be accepted by the simulator (which
// refuses what the API refuses), start with the parent's request byte for byte through its last
// message (and keep every other field of it byte for byte), carry the parent's reply as the API
// takes it back, answer each tool call with the placeholder, and read the parent's prefix from the
// cache as OpenAI's rules allow (same organisation, same prompt start, same prompt_cache_key).
import { forkPrefixFromNative } from "@forkd/core";
import type { NativePrefix } from "@forkd/protocol";
import type { RequestLogEntry } from "@forkd/sim";
import { describe, expect, it } from "vitest";
import { readNotesPrompt } from "../harness/client-sandbox.js";
import { useForkdStack } from "../harness/forkd.js";
import { OPENAI_CLIENT_API_KEY, runCodex, runQwenCode } from "../harness/openai-clients.js";
import {
  expectChatChildTail,
  expectParentBytes,
  expectParentCacheRead,
  expectResponsesChildTail,
} from "../harness/openai-fork-checks.js";

const stack = useForkdStack({ daemons: ["openai-a", "openai-b"], apiKey: OPENAI_CLIENT_API_KEY });

type Body = Record<string, unknown>;

/** The accepted requests of `path`, oldest first. */
function accepted(path: string): RequestLogEntry[] {
  return stack()
    .sim.requests()
    .filter((entry) => entry.path === path && entry.status === 200);
}

/** Forks `native` into three children on the daemons and returns each child's first request. */
async function forkThree(native: NativePrefix, path: string, tag: string) {
  const { forks, sim } = stack();
  const prefix = forkPrefixFromNative(native);
  const handles = forks.fanOut(
    { prefix, parent: { agent_id: `real-${tag}` }, provider: { api: native.api } },
    [1, 2, 3].map((i) => ({
      directive: `[${tag}-${i}] Audit slice ${i}.\n@sim say child ${i} done`,
      label: `${tag}-${i}`,
    })),
  );
  for (const handle of handles) {
    const outcome = await handle.result();
    expect(outcome.status, JSON.stringify(outcome)).toBe("completed");
  }
  return [1, 2, 3].map((i) => {
    const entry = sim.requests().find((e) => e.path === path && e.body.includes(`[${tag}-${i}]`));
    if (entry === undefined) throw new Error(`no ${path} request of child ${tag}-${i}`);
    expect(entry.status).toBe(200);
    return entry;
  });
}

describe("real OpenAI-API clients fork with their prefix intact", () => {
  it("qwen-code (Chat Completions): the turn that called read_file, forked into three children", {
    timeout: 240_000,
  }, async () => {
    const { sim } = stack();
    sim.reset();
    const output = await runQwenCode({
      baseUrl: sim.url,
      prompt: readNotesPrompt("read_file", { file_path: "notes.txt" }),
    });
    expect(output).toContain("Done.");
    const [parentEntry, nextEntry] = accepted("/v1/chat/completions");
    if (parentEntry === undefined || nextEntry === undefined)
      throw new Error("qwen-code sent fewer than two requests");
    const parent = JSON.parse(parentEntry.body) as Body & { messages: Body[] };
    // The reply as qwen-code itself sends it back: what the API takes as input.
    const reply = (JSON.parse(nextEntry.body) as { messages: Body[] }).messages[parent.messages.length]!;
    expect(reply.tool_calls).toHaveLength(1);
    const children = await forkThree(
      { api: "openai-chat", request: parent, reply: [reply] },
      "/v1/chat/completions",
      "qwen",
    );
    for (const [index, child] of children.entries()) {
      expectParentBytes(parentEntry.body, child.body, "messages");
      expectChatChildTail(child.body, parent.messages.length, reply, `[qwen-${index + 1}]`);
      expectParentCacheRead(parentEntry, child);
    }
  });

  it("the Codex CLI (Responses): the turn that called exec_command, forked into three children under its prompt_cache_key", {
    timeout: 240_000,
  }, async () => {
    const { sim } = stack();
    sim.reset();
    await runCodex({
      baseUrl: sim.url,
      prompt: readNotesPrompt("exec_command", { cmd: "cat notes.txt" }),
    });
    const [parentEntry, nextEntry] = accepted("/v1/responses");
    if (parentEntry === undefined || nextEntry === undefined)
      throw new Error("the Codex CLI sent fewer than two requests");
    const parent = JSON.parse(parentEntry.body) as Body & { input: Body[] };
    expect(typeof parent.prompt_cache_key).toBe("string");
    const next = (JSON.parse(nextEntry.body) as { input: Body[] }).input;
    const after = next.slice(parent.input.length);
    const reply = after.slice(
      0,
      after.findIndex((item) => item.type === "function_call_output"),
    );
    const call = reply.find((item) => item.type === "function_call");
    expect(call?.name).toBe("exec_command");
    const children = await forkThree(
      { api: "openai-responses", request: parent, reply },
      "/v1/responses",
      "codex",
    );
    for (const [index, child] of children.entries()) {
      expectParentBytes(parentEntry.body, child.body, "input");
      expect((JSON.parse(child.body) as Body).prompt_cache_key).toBe(parent.prompt_cache_key);
      expectResponsesChildTail(child.body, parent.input.length, reply, `[codex-${index + 1}]`);
      expectParentCacheRead(parentEntry, child);
    }
  });
});
