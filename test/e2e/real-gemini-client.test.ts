// A real Gemini agent from npm as the parent: the Gemini CLI runs a turn against the strict
// simulator (which refuses what the API refuses); that turn, read back from the simulator's log, is
// forked onto daemons over NATS. The children's daemons put the parent's prefix in one explicit
// `cachedContents` resource: its contents must be the parent's contents byte for byte through its
// last item and then the reply as the CLI itself sent it back, its system instruction and tools the
// parent's bytes; every child must name that cache instead of re-sending them, answer the call with
// the placeholder, and read the whole cache.
import { FORK_PLACEHOLDER_RESULT, forkPrefixFromNative } from "@forkd/core";
import type { NativePrefix } from "@forkd/protocol";
import type { RequestLogEntry } from "@forkd/sim";
import { describe, expect, it } from "vitest";
import { readNotesPrompt } from "../harness/client-sandbox.js";
import { useForkdStack } from "../harness/forkd.js";
import { GEMINI_CLIENT_API_KEY, GEMINI_CLIENT_MODEL, runGeminiCli } from "../harness/gemini-cli.js";
import { geminiCacheNames, rawField } from "../harness/gemini-fork-checks.js";

const stack = useForkdStack({ daemons: ["gemini-a", "gemini-b"], apiKey: GEMINI_CLIENT_API_KEY });

type Body = Record<string, unknown>;
const GENERATE = `/v1beta/models/${GEMINI_CLIENT_MODEL}:streamGenerateContent`;

/** The accepted requests of `path` (and `method`), oldest first. */
function accepted(path: string, method = "POST"): RequestLogEntry[] {
  return stack()
    .sim.requests()
    .filter((entry) => entry.path === path && entry.method === method && entry.status === 200);
}

describe("a real Gemini client forks with its prefix intact", () => {
  it("the Gemini CLI: the turn that called read_file, forked into three children that name one explicit cache", {
    timeout: 240_000,
  }, async () => {
    const { sim, forks } = stack();
    sim.reset();
    const output = await runGeminiCli({
      baseUrl: sim.url,
      prompt: readNotesPrompt("read_file", { file_path: "notes.txt" }),
    });
    expect(output).toContain("Done.");
    const turns = accepted(GENERATE);
    const parentEntry = turns.find((entry) => entry.body.includes("Read the notes.") && entry.turn === 0);
    const nextEntry = turns.find((entry) => entry.body.includes("Read the notes.") && entry.turn === 1);
    if (parentEntry === undefined || nextEntry === undefined)
      throw new Error(`the Gemini CLI sent no tool turn: ${turns.map((t) => t.turn).join(",")}`);
    const parent = JSON.parse(parentEntry.body) as Body & { contents: Body[] };
    // The reply as the CLI itself sends it back: what the API takes as input.
    const reply = (JSON.parse(nextEntry.body) as { contents: Body[] }).contents[parent.contents.length]!;
    expect(reply.role).toBe("model");
    const call = (reply.parts as Body[]).find((part) => part.functionCall !== undefined)?.functionCall as
      | Body
      | undefined;
    expect(call).toMatchObject({ name: "read_file" });

    sim.reset();
    const native: NativePrefix = {
      api: "gemini",
      model: GEMINI_CLIENT_MODEL,
      request: parent,
      reply: [reply],
    };
    const handles = forks.fanOut(
      {
        prefix: forkPrefixFromNative(native),
        parent: { agent_id: "real-gemini" },
        provider: { api: "gemini" },
      },
      [1, 2, 3].map((i) => ({
        directive: `[gemini-${i}] Audit slice ${i}.\n@sim say child ${i} done`,
        label: `gemini-${i}`,
      })),
    );
    for (const handle of handles) {
      const outcome = await handle.result();
      expect(outcome.status, JSON.stringify(outcome)).toBe("completed");
    }

    // One cache, created by the first child; its siblings found it.
    const creations = accepted("/v1beta/cachedContents");
    expect(creations).toHaveLength(1);
    const cacheRaw = creations[0]!.body;
    const cache = JSON.parse(cacheRaw) as Body & { contents: Body[] };
    // The parent's contents byte for byte, then its reply as the CLI sent it back.
    const parentContents = rawField(parentEntry.body, "contents");
    expect(cacheRaw).toContain(`"contents":${parentContents.slice(0, -1)},${JSON.stringify(reply)}]`);
    expect(cacheRaw).toContain(`"systemInstruction":${rawField(parentEntry.body, "systemInstruction")}`);
    expect(cacheRaw).toContain(`"tools":${rawField(parentEntry.body, "tools")}`);
    expect(cache.model).toBe(`models/${GEMINI_CLIENT_MODEL}`);
    const written = creations[0]!.usage?.cache_creation_input_tokens ?? 0;
    expect(written).toBeGreaterThan(1024);

    const names = await geminiCacheNames(sim.url, GEMINI_CLIENT_API_KEY);
    expect(names).toHaveLength(1);
    const name = names[0]!;

    for (const i of [1, 2, 3]) {
      const child = accepted(GENERATE).find((entry) => entry.body.includes(`[gemini-${i}]`));
      if (child === undefined) throw new Error(`no request of child ${i}`);
      const body = JSON.parse(child.body) as Body & { contents: Body[] };
      expect(body.cachedContent).toBe(name);
      expect(body.systemInstruction).toBeUndefined();
      expect(body.tools).toBeUndefined();
      // The parent's other settings as it sent them.
      expect(child.body).toContain(`"generationConfig":${rawField(parentEntry.body, "generationConfig")}`);
      expect(body.contents).toHaveLength(1);
      const own = body.contents[0]!;
      expect(own.role).toBe("user");
      const parts = own.parts as Body[];
      // As the CLI itself answers a call: its name, the output, the call's own id.
      expect(JSON.stringify(parts[0])).toBe(
        JSON.stringify({
          functionResponse: {
            name: "read_file",
            response: { output: FORK_PLACEHOLDER_RESULT },
            id: call!.id,
          },
        }),
      );
      expect(JSON.stringify(parts.slice(1))).toContain(`[gemini-${i}]`);
      expect(child.usage?.cache_read_input_tokens).toBe(written);
    }
  });
});
