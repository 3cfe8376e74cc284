// A real Gemini agent from npm as the parent: the Gemini CLI runs a turn against the strict
// simulator (which refuses what the API refuses); that turn, read back from the simulator's log, is
// forked onto daemons over NATS. The children's daemons put the parent's prefix in one explicit
// `cachedContents` resource: its contents must be the parent's contents byte for byte through its
// last item and then the reply as the CLI itself sent it back, its system instruction and tools the
// parent's bytes; every child must name that cache instead of re-sending them, answer the call with
// the placeholder, and read the whole cache.
import { forkPrefixFromNative } from "@forkd/core";
import type { NativePrefix } from "@forkd/protocol";
import type { RequestLogEntry } from "@forkd/sim";
import { describe, expect, it } from "vitest";
import { readNotesPrompt } from "../harness/client-sandbox.js";
import { useForkdStack } from "../harness/forkd.js";
import { GEMINI_CLIENT_API_KEY, GEMINI_CLIENT_MODEL, runGeminiCli } from "../harness/gemini-cli.js";
import { expectGeminiChildrenOnOneCache } from "../harness/gemini-fork-checks.js";

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
    // The reply as the CLI sent it back: the call's own id, answered by the children.
    expect(call?.id).toEqual(expect.any(String));
    await expectGeminiChildrenOnOneCache({
      sim,
      apiKey: GEMINI_CLIENT_API_KEY,
      model: GEMINI_CLIENT_MODEL,
      parentRaw: parentEntry.body,
      reply,
      since: 0,
      tag: "gemini",
      count: 3,
    });
  });
});
