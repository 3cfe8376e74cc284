// Distributed forks for the Gemini CLI, configured only: the real Gemini CLI from npm talks to the
// model through `forkd proxy` (GOOGLE_GEMINI_BASE_URL is `<proxy>/gemini`, whose upstream is the
// simulator) and has `forkd mcp` in its settings.json `mcpServers`. The scripted model calls the fork
// tool twice in one reply, then fork_result; the children run on two daemons. On Gemini the children
// share one explicit cache (docs/fork-semantics.md, "Per provider: Gemini"): it must hold the CLI's
// own request bytes through its last content, then the reply the proxy recorded, and the CLI's
// systemInstruction and tools; each child must name it, answer both calls and read all of it. The
// CLI must get both reports back and finish.
import { FORK_PLACEHOLDER_RESULT } from "@forkd/core";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";
import { GEMINI_CLIENT_API_KEY, GEMINI_CLIENT_MODEL, runGeminiCli } from "../harness/gemini-cli.js";
import { geminiCacheNames, rawField } from "../harness/gemini-fork-checks.js";
import { forkdMcpServers, isForkChild, useProxyCli } from "../harness/proxy-agent.js";

const stack = useForkdStack({ daemons: ["gem-agent-a", "gem-agent-b"], apiKey: GEMINI_CLIENT_API_KEY });

type Body = Record<string, unknown>;
type Content = { role?: string; parts: Body[] };
const GENERATE = `/v1beta/models/${GEMINI_CLIENT_MODEL}:streamGenerateContent`;
/** How the Gemini CLI names `forkd mcp`'s tools: `mcp_<server>_<tool>`. */
const FORK = "mcp_forkd_fork";
/** The thought signature the Gemini CLI puts on a call that came without one, when it sends it back. */
const SYNTHETIC_SIGNATURE = "skip_thought_signature_validator";

const proxy = useProxyCli(stack, (simUrl) => ["--upstream", simUrl, "--gemini-upstream", simUrl]);

const PROMPT = [
  "Audit the codec in two parts.",
  `@sim tool ${FORK} {"directive":"Audit the length checks.","label":"lengths"}`,
  // The Gemini CLI adds wait_for_previous to every tool's parameters, and passes it on to the server.
  `@sim tool ${FORK} {"directive":"Audit the depth checks.","label":"depths","wait_for_previous":false}`,
  "@sim turn",
  `@sim tool ${FORK}_result {}`,
  "@sim turn",
  "@sim say Both audits are back.",
].join("\n");

/**
 * A model content as the Gemini API gave it, from the CLI's copy: the CLI gives each call an `id` of
 * its own and the first call a synthetic thought signature before it sends the content back.
 */
function asTheApiGaveIt(content: Content): Content {
  return {
    ...content,
    parts: content.parts.map((part) => {
      const { thoughtSignature, ...rest } = part;
      if (thoughtSignature !== undefined) expect(thoughtSignature).toBe(SYNTHETIC_SIGNATURE);
      if (rest.functionCall === undefined) return rest;
      const { id, ...call } = rest.functionCall as Body;
      expect(id, "the CLI names each call").toEqual(expect.any(String));
      return { ...rest, functionCall: call };
    }),
  };
}

describe("the Gemini CLI forks onto the cluster through forkd proxy and forkd mcp", () => {
  it("two forks in one reply, then fork_result; the children name one cache of the CLI's prefix", {
    timeout: 300_000,
  }, async () => {
    const { sim } = stack();
    sim.reset();
    const output = await runGeminiCli({
      baseUrl: sim.url,
      geminiBaseUrl: `${proxy().url}/gemini`,
      prompt: PROMPT,
      mcpServers: forkdMcpServers(stack(), proxy()),
      timeoutMs: 180_000,
    });
    expect(output).toContain("Both audits are back.");

    const entries = sim.requests().filter((entry) => entry.path === GENERATE && entry.status === 200);
    const agent = entries.filter((entry) => !isForkChild(entry));
    const bodies = agent.map((entry) => JSON.parse(entry.body) as Body & { contents: Content[] });
    // The forking turn: the request whose reply, as the next request sends it back, calls fork twice.
    const at = bodies.findIndex((body, i) => {
      const reply = bodies[i + 1]?.contents[body.contents.length];
      return (
        reply?.parts.filter((part) => (part.functionCall as Body | undefined)?.name === FORK).length === 2
      );
    });
    expect(at, "a turn whose reply called the fork tool twice").toBeGreaterThanOrEqual(0);
    const parentEntry = agent[at]!;
    const parentContents = bodies[at]!.contents;
    const reply = asTheApiGaveIt(bodies[at + 1]!.contents[parentContents.length]!);
    expect(reply.role).toBe("model");
    // The tool's description carries the marker the proxy keys the session by, as forkd mcp wrote it.
    expect(parentEntry.body).toMatch(/"name":"mcp_forkd_fork","description":"[^"]*\[forkd-mcp:[0-9a-f]+\]/);

    // One cache, created by the first child: the CLI's contents byte for byte, then the reply the
    // proxy recorded (the API's), with the CLI's systemInstruction and tools.
    const creations = sim
      .requests()
      .filter(
        (entry) => entry.path === "/v1beta/cachedContents" && entry.method === "POST" && entry.status === 200,
      );
    expect(creations).toHaveLength(1);
    const cacheRaw = creations[0]!.body;
    const contentsRaw = rawField(parentEntry.body, "contents");
    expect(cacheRaw).toContain(`"contents":${contentsRaw.slice(0, -1)},{`);
    const cached = (JSON.parse(cacheRaw) as { contents: Content[] }).contents;
    expect(cached).toHaveLength(parentContents.length + 1);
    // The CLI re-serialises what it sends back (its own key order): the same content, not the same bytes.
    expect(cached.at(-1)).toEqual(reply);
    expect(cacheRaw).toContain(`"systemInstruction":${rawField(parentEntry.body, "systemInstruction")}`);
    expect(cacheRaw).toContain(`"tools":${rawField(parentEntry.body, "tools")}`);
    expect((JSON.parse(cacheRaw) as Body).model).toBe(`models/${GEMINI_CLIENT_MODEL}`);
    const written = creations[0]!.usage?.cache_creation_input_tokens ?? 0;
    expect(written).toBeGreaterThan(1024);
    const names = await geminiCacheNames(sim.url, GEMINI_CLIENT_API_KEY);
    expect(names).toHaveLength(1);
    const cacheName = names[0]!;

    // Each call's id is the core's for a call without one: <name>-<turn>-<part>.
    const callIds = reply.parts.flatMap((part, index) =>
      (part.functionCall as Body | undefined)?.name === FORK
        ? [`${FORK}-${parentContents.length}-${index}`]
        : [],
    );
    const children = entries.filter(isForkChild);
    expect(children).toHaveLength(2);
    const directives: string[] = [];
    for (const child of children) {
      const body = JSON.parse(child.body) as Body & { contents: Content[] };
      expect(body.cachedContent).toBe(cacheName);
      expect(body.systemInstruction).toBeUndefined();
      expect(body.tools).toBeUndefined();
      expect(child.body).toContain(`"generationConfig":${rawField(parentEntry.body, "generationConfig")}`);
      expect(body.contents).toHaveLength(1);
      const parts = body.contents[0]!.parts;
      // Both calls answered as the CLI answers a call, by name (the API gave no id), in order.
      expect(parts.slice(0, 2)).toEqual(
        callIds.map(() => ({
          functionResponse: { name: FORK, response: { output: FORK_PLACEHOLDER_RESULT } },
        })),
      );
      const text = JSON.stringify(parts.slice(2));
      // The proxy makes an id-less call's id unique per reply: `<core's id>~<reply number>`.
      const own = callIds.filter((id) => new RegExp(`tool_use_id=\\\\"${id}~\\d+\\\\"`).test(text));
      expect(own, "the child is told which call is its own").toHaveLength(1);
      directives.push(
        ["Audit the length checks.", "Audit the depth checks."].find((directive) =>
          text.includes(directive),
        ) ?? "",
      );
      expect(child.usage?.cache_read_input_tokens).toBe(written);
    }
    expect(directives.sort()).toEqual(["Audit the depth checks.", "Audit the length checks."]);

    // Both reports reached the CLI, and went back to the model.
    const last = agent.at(-1)!.body;
    expect(last.match(/<status>completed<\/status>/g)).toHaveLength(2);
    for (const id of callIds) expect(last).toMatch(new RegExp(`<tool-use-id>${id}~\\d+</tool-use-id>`));
  });
});
