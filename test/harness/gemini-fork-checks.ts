// What the Gemini fork tests read on the simulator: a request's field as its sender serialised it,
// the explicit caches a key holds, and what makes the children of one Gemini turn faithful.
import { FORK_PLACEHOLDER_RESULT } from "@forkd/core";
import type { Sim } from "@forkd/sim";
import { expect } from "vitest";

type Body = Record<string, unknown>;

/** `body[field]` as JavaScript writes it (what a fork writes of a Gemini parent's request). */
function writtenField(raw: string, field: string): string {
  return JSON.stringify((JSON.parse(raw) as Record<string, unknown>)[field]);
}

/** The raw JSON text of `body[field]` as it appears in `raw` (the serialiser's own bytes). */
export function rawField(raw: string, field: string): string {
  const value = writtenField(raw, field);
  expect(raw).toContain(`"${field}":${value}`);
  return value;
}

/** The resource names of the explicit caches `apiKey` holds on the simulator at `simUrl`. */
export async function geminiCacheNames(simUrl: string, apiKey: string): Promise<string[]> {
  const listed = (await (await fetch(`${simUrl}/v1beta/cachedContents?key=${apiKey}`)).json()) as {
    cachedContents?: { name: string }[];
  };
  return (listed.cachedContents ?? []).map((cache) => cache.name);
}

/** Options of {@link expectGeminiChildrenOnOneCache}. */
export interface GeminiChildrenOnOneCache {
  sim: Sim;
  /** The daemons' key: the one whose caches the simulator lists. */
  apiKey: string;
  model: string;
  /** The parent's request as the simulator logged it. */
  parentRaw: string;
  /**
   * The parent's request was written by another JSON writer than JavaScript's (a Python SDK's
   * `1.0`, `2.0`): the cache and the children hold its values as JavaScript writes them, which the
   * Gemini API reads as the same values, rather than its bytes. @default false
   */
  byValue?: boolean;
  /** The parent's reply as the children carry it (`{ role: "model", parts }`), one function call in it. */
  reply: Record<string, unknown>;
  /** The simulator's log entries after this `seq` are the fan-out's. */
  since: number;
  /** Child `i` (1 to `count`) has `[<tag>-<i>]` in its directive. */
  tag: string;
  count: number;
}

/**
 * Asserts that the children of one Gemini turn share one explicit cache and read all of it: the
 * first child created it with the parent's contents byte for byte, then the reply, and the parent's
 * `systemInstruction` and `tools`; each child names it instead of re-sending them, keeps the parent's
 * `generationConfig`, and sends only its answer to the call (the placeholder, as the Gemini CLI
 * answers a call: its name, the output, the call's id if it had one) and its directive.
 */
export async function expectGeminiChildrenOnOneCache(check: GeminiChildrenOnOneCache): Promise<void> {
  const { sim, parentRaw, reply } = check;
  const parentField = check.byValue === true ? writtenField : rawField;
  const accepted = sim
    .requests()
    .filter((entry) => entry.seq > check.since && entry.method === "POST" && entry.status === 200);
  // One cache, created by the first child; its siblings found it.
  const creations = accepted.filter((entry) => entry.path === "/v1beta/cachedContents");
  expect(creations).toHaveLength(1);
  const cacheRaw = creations[0]!.body;
  const parentContents = parentField(parentRaw, "contents");
  expect(cacheRaw).toContain(`"contents":${parentContents.slice(0, -1)},${JSON.stringify(reply)}]`);
  expect(cacheRaw).toContain(`"systemInstruction":${parentField(parentRaw, "systemInstruction")}`);
  expect(cacheRaw).toContain(`"tools":${parentField(parentRaw, "tools")}`);
  expect((JSON.parse(cacheRaw) as { model?: unknown }).model).toBe(`models/${check.model}`);
  const written = creations[0]!.usage?.cache_creation_input_tokens ?? 0;
  expect(written).toBeGreaterThan(1024);

  const names = await geminiCacheNames(sim.url, check.apiKey);
  expect(names).toHaveLength(1);
  const call = ((reply.parts as Body[]).find((part) => part.functionCall !== undefined)?.functionCall ??
    {}) as Body;
  const generate = `/v1beta/models/${check.model}:streamGenerateContent`;
  for (let i = 1; i <= check.count; i++) {
    const child = accepted.find(
      (entry) => entry.path === generate && entry.body.includes(`[${check.tag}-${i}]`),
    );
    if (child === undefined) throw new Error(`no request of child ${check.tag}-${i}`);
    const body = JSON.parse(child.body) as Body & { contents: Body[] };
    expect(body.cachedContent).toBe(names[0]);
    expect(body.systemInstruction).toBeUndefined();
    expect(body.tools).toBeUndefined();
    // The parent's other settings as it sent them.
    expect(child.body).toContain(`"generationConfig":${parentField(parentRaw, "generationConfig")}`);
    expect(body.contents).toHaveLength(1);
    const own = body.contents[0]!;
    expect(own.role).toBe("user");
    const parts = own.parts as Body[];
    expect(JSON.stringify(parts[0])).toBe(
      JSON.stringify({
        functionResponse: {
          name: call.name,
          response: { output: FORK_PLACEHOLDER_RESULT },
          ...(call.id === undefined ? {} : { id: call.id }),
        },
      }),
    );
    expect(JSON.stringify(parts.slice(1))).toContain(`[${check.tag}-${i}]`);
    expect(child.usage?.cache_read_input_tokens).toBe(written);
  }
}
