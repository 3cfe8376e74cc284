// #13 Effective input cost per child per provider: five children of the 48k parent, one by one and
// all at once (warm-first), against each child's own request on a cold cache (no fork) and a naive
// parallel fan-out.
// - OpenAI (Chat Completions and Responses): the simulator charges by OpenAI's documented rules,
//   automatic prefix caching from 1,024 tokens in 128-token steps, no write charge, machines chosen
//   by prompt start and prompt_cache_key (GPT-5); and on Responses with gpt-5.6-terra, the breakpoint
//   cache (prefixes read exactly at a breakpoint, writes at 1.25×), where the children mark the
//   parent's end and the last block they share.
// - Gemini (gemini-cost.ts): one explicit cache of the parent's prefix per fan-out, its creation and
//   storage counted beside the children's reads.
import { computeCacheKey, derivedPromptCacheKey, type LlmRequest } from "@forkd/core";
import { OpenAiLlmClient } from "@forkd/llm";
import type { ForkPrefix, LlmApi } from "@forkd/protocol";
import { openAiBreakpointUnits, type RequestLogEntry, renderOpenAiPrompt } from "@forkd/sim";
import { SIM_API_KEY, startCluster } from "./cluster.js";
import { fanOutCompleted } from "./fan-out.js";
import { AUDIT_DIRECTIVES as DIRECTIVES, parentTurn, taggedDirective } from "./fixtures.js";
import { geminiCosts } from "./gemini-cost.js";
import { now, round } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const TTFT_MS = 500;
/** GPT-5 and GPT-5.6: a cached input token costs a tenth of an uncached one. */
const READ = 0.1;
/** GPT-5.6: a token written to the cache costs 1.25 uncached ones (GPT-5 reports no writes). */
const WRITE = 1.25;
const STEP = 128;
const RATIO_TARGET = 1.05;
const MODEL = "gpt-5";
/** The GPT-5.6 family's row: breakpoints, writes billed. */
const MODEL_56 = "gpt-5.6-terra";
const APIS = [
  { api: "openai-chat", client: "chat", path: "/v1/chat/completions", model: MODEL, label: "openai-chat" },
  {
    api: "openai-responses",
    client: "responses",
    path: "/v1/responses",
    model: MODEL,
    label: "openai-responses",
  },
  {
    api: "openai-responses",
    client: "responses",
    path: "/v1/responses",
    model: MODEL_56,
    label: "openai-responses-gpt-5.6",
  },
] as const;

/** A child's first request, found by the tag its directive carries. */
export interface Child {
  tag: string;
  entry: RequestLogEntry;
}

interface ChildCost {
  child: number;
  prompt: number;
  cached: number;
  /** @unit input-token equivalents */
  cost: number;
  floor: number;
  ratioToFloor: number;
}

/** Input cost in input-token equivalents: uncached at 1, written at 1.25 (GPT-5.6), cached at 0.1. */
const costOf = (entry: RequestLogEntry) =>
  (entry.usage?.input_tokens ?? 0) +
  WRITE * (entry.usage?.cache_creation_input_tokens ?? 0) +
  READ * (entry.usage?.cache_read_input_tokens ?? 0);
const promptOf = (entry: RequestLogEntry) =>
  (entry.usage?.input_tokens ?? 0) +
  (entry.usage?.cache_creation_input_tokens ?? 0) +
  (entry.usage?.cache_read_input_tokens ?? 0);
const down = (tokens: number) => Math.floor(tokens / STEP) * STEP;
const sum = (rows: { cost: number }[]) =>
  round(
    rows.reduce((t, r) => t + r.cost, 0),
    1,
  );
const worst = (rows: ChildCost[]) => Math.max(...rows.map((r) => r.ratioToFloor));

/** Characters two prompts share from their start. */
function commonChars(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

export const providerCostBenchmark: Benchmark = {
  id: 13,
  name: "effective input cost per child per provider (5 children of the 48k parent: OpenAI Chat Completions and Responses, Gemini)",
  async run(context: BenchContext) {
    const cluster = await startCluster({ daemons: 2, concurrency: 8, latency: { ttftMs: TTFT_MS } });
    try {
      const turn = await parentTurn("48k");
      const forks = await cluster.subagent();
      const seen = new Map<string, Child>();
      cluster.sim.on("request", (entry) => {
        // OpenAI bodies carry their tools after the messages: the tag is searched in the whole body.
        const tag = [...entry.body.matchAll(/\[bench:([A-Za-z0-9_-]+)\]/g)].at(-1)?.[1];
        if (tag !== undefined && entry.usage !== null) seen.set(tag, { tag, entry });
      });
      const figures: Record<string, unknown> = {};
      const baseline: Record<string, unknown> = {};
      const notes: string[] = [];
      const headlines: string[] = [];
      const baselines: string[] = [];
      let pass = true;

      for (const { api, client, path, model, label } of APIS) {
        const prefix: ForkPrefix = { ...turn.prefix, params: { ...turn.prefix.params, model } };
        const key = derivedPromptCacheKey(computeCacheKey(prefix.params, prefix.betas).hash);
        const breakpoints = model === MODEL_56;
        // The prompt as the simulator caches it: block by block on the breakpoint models.
        const render = (body: Record<string, unknown>) =>
          breakpoints
            ? openAiBreakpointUnits(client, body)
                .map((unit) => unit.text)
                .join("\n")
            : renderOpenAiPrompt(client, body);
        const llm = new OpenAiLlmClient({
          api: client,
          baseURL: `${cluster.sim.url}/v1`,
          apiKey: SIM_API_KEY,
          retry: { maxRetries: 0 },
        });
        const parentRequest = { ...turn.request, model } as unknown as LlmRequest;
        const parentPrompt = render(llm.body(parentRequest, { promptCacheKey: key }));
        const base = { prefix, parent: { agent_id: "bench-parent" }, provider: { api: api as LlmApi } };
        const scenario = async (name: string, launch: (tags: string[]) => Promise<void>) => {
          cluster.sim.reset();
          const parent = await llm.send(parentRequest, { promptCacheKey: key });
          const tags = DIRECTIVES.map((_, i) => `${label.replace(/\./g, "")}-${name}-${i + 1}`);
          const started = now();
          await launch(tags);
          const wallMs = round(now() - started, 0);
          const children = tags.map((tag) => {
            const child = seen.get(tag);
            if (child === undefined || child.entry.path !== path)
              throw new Error(
                `${api} ${name}: no ${path} request for ${tag}: ${child?.entry.path} ${child?.entry.status} ${child?.entry.body.slice(0, 300)}`,
              );
            return child;
          });
          return { parentUsage: parent.usage, children, wallMs };
        };
        const params = (tag: string, i: number) => ({
          directive: taggedDirective(tag, DIRECTIVES[i]!),
          label: tag,
        });
        context.log(`${label}: one by one`);
        const oneByOne = await scenario("seq", async (tags) => {
          for (const [i, tag] of tags.entries()) {
            const outcome = await forks.fork({ ...base, ...params(tag, i) }).result();
            if (outcome.status !== "completed")
              throw new Error(`${api}: child ${tag} ended ${outcome.status}: ${JSON.stringify(outcome)}`);
          }
        });
        const fanOut = (warmFirst: boolean) => async (tags: string[]) => {
          await fanOutCompleted(
            forks,
            base,
            tags.map((tag, i) => params(tag, i)),
            { warmFirst, what: api },
          );
        };
        context.log(`${label}: all at once (warm-first)`);
        const warm = await scenario("warm", fanOut(true));
        context.log(`${label}: naive parallel`);
        const naive = await scenario("naive", fanOut(false));
        context.log(`${label}: a prompt_cache_key per child (siblings routed apart)`);
        const keyPerChild = await scenario("perkey", async (tags) => {
          for (const [i, tag] of tags.entries()) {
            const provider = { api: api as LlmApi, prompt_cache_key: `${tag}-own-key` };
            const outcome = await forks.fork({ ...base, provider, ...params(tag, i) }).result();
            if (outcome.status !== "completed")
              throw new Error(`${api}: child ${tag} ended ${outcome.status}`);
          }
        });
        context.log(`${label}: no fork (each child's request on a cold cache)`);
        cluster.sim.reset();
        const fresh = await Promise.all(
          oneByOne.children.map(async (child, i) => {
            const response = await fetch(`${cluster.sim.url}${path}`, {
              method: "POST",
              headers: {
                authorization: `Bearer sk-forkd-bench-fresh-${api}-${i + 1}`,
                "content-type": "application/json",
              },
              body: JSON.stringify({
                ...(JSON.parse(child.entry.body) as Record<string, unknown>),
                stream: false,
                stream_options: undefined,
              }),
            });
            const json = (await response.json()) as {
              usage?: Record<string, number & Record<string, number>>;
            };
            if (!response.ok) throw new Error(`${api} no-fork: ${response.status} ${JSON.stringify(json)}`);
            return { cost: promptOf(child.entry) };
          }),
        );

        // Each child's floor from its own request: the part every sibling shares is read at 0.1 in whole
        // 128-token steps (the first child can read only the parent's own prompt: the fork's delta exists
        // once a child has sent it), the rest is paid in full.
        const prompts = oneByOne.children.map((c) =>
          render(JSON.parse(c.entry.body) as Record<string, unknown>),
        );
        const shared = Math.floor(commonChars(prompts[0]!, prompts[1]!) / 4);
        const parentTokens = Math.floor(commonChars(prompts[0]!, parentPrompt) / 4);
        const costs = (children: Child[]): ChildCost[] =>
          children.map((child, i) => {
            const prompt = promptOf(child.entry);
            // GPT-5.6 reads exactly at a breakpoint, not in 128-token steps.
            const limit = Math.min(i === 0 ? parentTokens : shared, prompt - 1);
            const readable = breakpoints ? limit : down(limit);
            const floor = READ * readable + (prompt - readable);
            const cost = costOf(child.entry);
            return {
              child: i + 1,
              prompt,
              cached: child.entry.usage?.cache_read_input_tokens ?? 0,
              cost: round(cost, 1),
              floor: round(floor, 1),
              ratioToFloor: round(cost / floor, 4),
            };
          });
        const seq = costs(oneByOne.children);
        const all = costs(warm.children);
        const naiveCosts = costs(naive.children);
        const perKey = costs(keyPerChild.children);
        const ok = worst(seq) <= RATIO_TARGET && worst(all) <= RATIO_TARGET;
        pass &&= ok;
        figures[label] = {
          one_by_one: seq,
          all_at_once: all,
          total_one_by_one: sum(seq),
          total_all_at_once: sum(all),
          parent_usage: oneByOne.parentUsage,
          prompt_cache_key: key,
        };
        baseline[label] = {
          no_fork: fresh,
          naive_parallel: naiveCosts,
          total_no_fork: sum(fresh),
          total_naive_parallel: sum(naiveCosts),
          key_per_child: perKey,
          total_key_per_child: sum(perKey),
        };
        headlines.push(
          `${label}: worst child ${worst(seq).toFixed(3)}× floor one by one, ${worst(all).toFixed(3)}× all at once`,
        );
        baselines.push(`${label}: no fork ${(sum(fresh) / sum(all)).toFixed(2)}× the forked total`);
        notes.push(
          `${label}: shared prefix ${shared} tokens (parent's own prompt ${parentTokens}); totals one by one ${sum(seq)}, all at once ${sum(all)}, naive parallel ${sum(naiveCosts)}, a key per child ${sum(perKey)} (${perKey.filter((r) => r.cached === 0).length} of 5 read nothing: each key routes to a machine of its own), no fork ${sum(fresh)} input-token equivalents. Wall time one by one ${oneByOne.wallMs} ms, all at once ${warm.wallMs} ms.`,
        );
        if (!ok)
          notes.push(`MISSED (${label}): worst child ${worst(seq)}× one by one, ${worst(all)}× all at once.`);
      }
      context.log("gemini");
      const gemini = await geminiCosts({ cluster, forks, turn, seen, log: (line) => context.log(line) });
      figures.gemini = gemini.figures;
      baseline.gemini = gemini.baseline;
      headlines.push(gemini.headline);
      baselines.push(gemini.baselineHeadline);
      notes.push(...gemini.notes);
      pass &&= gemini.pass;
      notes.push(
        `Floor: what OpenAI's rules allow. Cached input counts in whole 128-token steps and at least one token is computed, so a child reads at most the largest multiple of 128 below its shared prefix; child 1 can read only the parent's own prompt (OpenAI charges no write: child 1 pays the fork's delta at 1×, and the others read it). Cost = uncached input + 0.1 × cached (GPT-5), in input-token equivalents, from the usage the simulator charged; output not counted. Every child sends the parent's prompt_cache_key (derived from the prefix's cache key hash), so all land on the machine that holds the parent's prefix.`,
        `No fork: each child's exact request under an API key of its own (a cold cache), so every token is paid at 1×.`,
        `GPT-5.6 (openai-responses-gpt-5.6, ${MODEL_56}): the simulator's breakpoint cache. A child marks the parent's last message (where the parent's request wrote its implicit breakpoint) and the last placeholder (the last block siblings share); cost = uncached + 1.25 × written + 0.1 × cached. The floor is the same as above without the 128-token steps and with no write charge at all: every write (child 1's delta, each child's implicit breakpoint at its own directive) counts against the ratio.`,
      );
      return {
        figures,
        baseline,
        target:
          "every child ≤ 1.05× its floor, on both OpenAI APIs; on Gemini, the fan-out (children and its explicit cache) ≤ 1.05× its floor",
        headline: headlines.join("; "),
        baselineHeadline: baselines.join("; "),
        pass,
        params: {
          fixture: "48k",
          children: 5,
          daemons: 2,
          sim_ttft_ms: TTFT_MS,
          model: MODEL,
          model_gpt56: MODEL_56,
          gemini_model: gemini.model,
        },
        notes,
      };
    } finally {
      await cluster.stop();
    }
  },
};
