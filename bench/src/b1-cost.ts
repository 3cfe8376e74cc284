// #1 Effective input cost per child: five children of the 48k parent, one by one and all at once
// (warm-first), against the same children with a fresh context and a naive parallel fan-out.
import type { ForkHandle } from "@forkd/core";
import { layoutPrompt, type Usage, validateRequest } from "@forkd/sim";
import { SIM_API_KEY, startCluster } from "./cluster.js";
import { AUDIT_DIRECTIVES as DIRECTIVES, parentTurn, taggedDirective, tagOf } from "./fixtures.js";
import { now, round } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

/** Pending window of the simulated provider: children launched inside it all miss the fork's delta. */
const TTFT_MS = 500;
const READ = 0.1;
const WRITE_5M = 1.25;
const WRITE_1H = 2;
const RATIO_TARGET = 1.05;
const TOTAL_TOLERANCE = 0.05;

/** Input cost in input-token equivalents: uncached at 1, cache writes at 1.25 (5 min) or 2 (1 h), reads at 0.1. */
function inputCost(usage: Usage): number {
  const write1h = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const write5m = usage.cache_creation_input_tokens - write1h;
  return usage.input_tokens + WRITE_5M * write5m + WRITE_1H * write1h + READ * usage.cache_read_input_tokens;
}

const x = (ratio: number, digits = 3) => `${ratio.toFixed(digits)}×`;

/** Tokens from the start of the prompt through its last cache breakpoint. */
function tokensThroughLastBreakpoint(request: unknown): { through: number; total: number } {
  const layout = layoutPrompt(validateRequest(request, "messages"));
  let through = 0;
  let cumulative = 0;
  for (const block of layout.blocks) {
    cumulative += block.tokens;
    if (block.cacheControl !== undefined) through = cumulative;
  }
  return { through, total: layout.totalTokens };
}

interface Child {
  tag: string;
  usage: Usage;
  /** The request body the simulator received. */
  body: string;
}

interface ChildCost {
  child: number;
  read: number;
  write: number;
  input: number;
  /** @unit input-token equivalents */
  cost: number;
  /** 0.1 × shared prefix + own delta at full price (the floor). */
  strictFloor: number;
  /** The achievable floor: the strict floor, except that the first child must write the fork's delta. */
  floor: number;
  ratioToFloor: number;
  ratioToStrictFloor: number;
}

async function postMessages(url: string, apiKey: string, body: unknown): Promise<Usage> {
  const response = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": apiKey, "anthropic-version": "2023-06-01" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const json = (await response.json()) as { usage?: Usage; error?: unknown };
  if (!response.ok || json.usage === undefined) {
    throw new Error(`simulator answered ${response.status}: ${JSON.stringify(json.error ?? json)}`);
  }
  return json.usage;
}

export const costBenchmark: Benchmark = {
  id: 1,
  name: "effective input cost per child (5 children of the 48k parent)",
  async run(context: BenchContext) {
    const cluster = await startCluster({ daemons: 2, concurrency: 8, latency: { ttftMs: TTFT_MS } });
    try {
      const turn = await parentTurn("48k");
      const forks = await cluster.subagent();
      const seen = new Map<string, Child>();
      cluster.sim.on("request", (entry) => {
        const tag = tagOf(entry.body);
        if (tag !== undefined && entry.usage !== null)
          seen.set(tag, { tag, usage: entry.usage, body: entry.body });
      });
      const parentBody = { ...turn.request, stream: false };
      const parentTokens = tokensThroughLastBreakpoint(parentBody).through;

      /** Cold cache, then the parent's own request (it writes its prefix, as it did in reality), then `launch`. */
      const scenario = async (name: string, launch: (tags: string[]) => Promise<ForkHandle[]>) => {
        cluster.sim.reset();
        const parentUsage = await postMessages(cluster.sim.url, SIM_API_KEY, parentBody);
        const tags = DIRECTIVES.map((_, i) => `${name}-${i + 1}`);
        const started = now();
        const handles = await launch(tags);
        for (const handle of handles) {
          const outcome = await handle.result();
          if (outcome.status !== "completed") throw new Error(`${name}: a child ended ${outcome.status}`);
        }
        const wallMs = round(now() - started, 0);
        const children = tags.map((tag) => {
          const child = seen.get(tag);
          if (!child) throw new Error(`${name}: the simulator never charged child ${tag}`);
          return child;
        });
        return { parentUsage, children, wallMs };
      };
      const params = (tag: string, i: number) => ({
        directive: taggedDirective(tag, DIRECTIVES[i]!),
        label: tag,
      });
      const base = { prefix: turn.prefix, parent: { agent_id: "bench-parent" } };

      context.log("one by one");
      const oneByOne = await scenario("seq", async (tags) => {
        for (const [i, tag] of tags.entries()) {
          const outcome = await forks.fork({ ...base, ...params(tag, i) }).result();
          if (outcome.status !== "completed")
            throw new Error(`one by one: child ${tag} ended ${outcome.status}`);
        }
        return []; // each child was awaited above
      });
      const fanOut = (warmFirst: boolean) => async (tags: string[]) =>
        forks.fanOut(
          base,
          tags.map((tag, i) => params(tag, i)),
          { warmFirst },
        );
      context.log("all at once (warm-first fan-out)");
      const allAtOnce = await scenario("warm", fanOut(true));
      context.log("naive parallel (fan-out without warm-first)");
      const naive = await scenario("naive", fanOut(false));
      context.log("fresh context (each child's request under its own API key: a cold cache)");
      cluster.sim.reset();
      const fresh = await Promise.all(
        oneByOne.children.map(async (child, i) => ({
          ...child,
          usage: await postMessages(cluster.sim.url, `sk-forkd-bench-fresh-${i + 1}`, {
            ...(JSON.parse(child.body) as Record<string, unknown>),
            stream: false,
          }),
        })),
      );

      // The floor of each child, from the request the simulator received for it.
      const floorOf = (child: Child) => {
        const { through: shared, total } = tokensThroughLastBreakpoint(JSON.parse(child.body));
        const delta = total - shared;
        return { shared, delta, strictFloor: READ * shared + delta };
      };
      const costs = (children: Child[]): ChildCost[] =>
        children.map((child, i) => {
          const { shared, strictFloor } = floorOf(child);
          const floor = i === 0 ? strictFloor + (WRITE_5M - READ) * (shared - parentTokens) : strictFloor;
          const cost = inputCost(child.usage);
          return {
            child: i + 1,
            read: child.usage.cache_read_input_tokens,
            write: child.usage.cache_creation_input_tokens,
            input: child.usage.input_tokens,
            cost: round(cost, 1),
            strictFloor: round(strictFloor, 1),
            floor: round(floor, 1),
            ratioToFloor: round(cost / floor, 4),
            ratioToStrictFloor: round(cost / strictFloor, 4),
          };
        });
      const floors = oneByOne.children.map(floorOf);
      const sum = (rows: ChildCost[]) =>
        round(
          rows.reduce((total, row) => total + row.cost, 0),
          1,
        );
      const worst = (rows: ChildCost[], key: "ratioToFloor" | "ratioToStrictFloor") =>
        Math.max(...rows.map((row) => row[key]));

      const seqCosts = costs(oneByOne.children);
      const warmCosts = costs(allAtOnce.children);
      const naiveCosts = costs(naive.children);
      const freshCosts = costs(fresh);
      const totalRatio = round(sum(warmCosts) / sum(seqCosts), 4);
      const seqOk = worst(seqCosts, "ratioToFloor") <= RATIO_TARGET;
      const warmOk = worst(warmCosts, "ratioToFloor") <= RATIO_TARGET;
      const totalOk = Math.abs(totalRatio - 1) <= TOTAL_TOLERANCE;
      const pass = seqOk && warmOk && totalOk;
      const sharedTokens = floors[0]!.shared;
      const notes = [
        `Shared prefix (through the child's last breakpoint): ${sharedTokens} tokens, of which the parent's own prefix is ${parentTokens} and the fork's delta (the parent's reply and the placeholder results) ${sharedTokens - parentTokens}. Own deltas (directive block and the request's overhead): ${floors.map((f) => f.delta).join(", ")} tokens.`,
        `Floor: the strict floor is 0.1 × shared prefix + own delta at full price. It cannot be met by the first child: the fork's delta exists only once a child has written it, at 1.25×. The floor used for the verdict therefore charges child 1 that write (0.1 × parent prefix + 1.25 × fork delta + own delta) and is the strict floor for children 2..5. Both ratios are reported.`,
        "Cost is computed from the usage the simulator charged each request (its log), in input-token equivalents: uncached input 1×, cache writes 1.25× (5 min) / 2× (1 h), cache reads 0.1×. Output is not counted. The parent's own request is sent first in every scenario (cache reset before each), so each starts where a real parent stands.",
        `The simulator answers after a ${TTFT_MS} ms time to first token: the pending window in which launched children cannot read what a sibling is writing.`,
        `Wall time: one by one ${oneByOne.wallMs} ms, all at once (warm-first) ${allAtOnce.wallMs} ms, naive parallel ${naive.wallMs} ms.`,
        `Naive parallel: ${naiveCosts.filter((row) => row.write > 0).length} of 5 children wrote the fork's delta; total ${sum(naiveCosts)} vs ${sum(warmCosts)} warm-first (${round((sum(naiveCosts) / sum(warmCosts) - 1) * 100, 1)} % more). With this parent (3 tool calls) the delta is small, so the waste is small; it grows with the reply and the number of children.`,
        `Fresh context (each child's exact request under its own API key, so a cold cache; the requests keep their breakpoints, so everything is written at 1.25×): total ${sum(freshCosts)}, ${round(sum(freshCosts) / sum(seqCosts), 2)}× the forked one-by-one total. Without breakpoints it would be ${round(
          fresh.reduce(
            (t, c) =>
              t +
              c.usage.input_tokens +
              c.usage.cache_creation_input_tokens +
              c.usage.cache_read_input_tokens,
            0,
          ),
          0,
        )} (1× per token).`,
      ];
      if (!pass) {
        if (!seqOk)
          notes.push(`MISSED: one by one, worst child ${worst(seqCosts, "ratioToFloor")}× its floor.`);
        if (!warmOk)
          notes.push(`MISSED: all at once, worst child ${worst(warmCosts, "ratioToFloor")}× its floor.`);
        if (!totalOk) notes.push(`MISSED: all at once costs ${totalRatio}× one by one.`);
      }
      return {
        figures: {
          one_by_one: seqCosts,
          all_at_once: warmCosts,
          total_one_by_one: sum(seqCosts),
          total_all_at_once: sum(warmCosts),
          all_at_once_over_one_by_one: totalRatio,
          parent_usage: oneByOne.parentUsage,
        },
        baseline: {
          fresh_context: freshCosts,
          naive_parallel: naiveCosts,
          total_fresh_context: sum(freshCosts),
          total_naive_parallel: sum(naiveCosts),
        },
        target: "every child ≤ 1.05× its floor; all at once within 5 % of one by one",
        headline: `worst child ${x(worst(seqCosts, "ratioToFloor"))} floor one by one, ${x(worst(warmCosts, "ratioToFloor"))} all at once (vs strict floor: ${x(worst(seqCosts, "ratioToStrictFloor"))} / ${x(worst(warmCosts, "ratioToStrictFloor"))}); all at once = ${x(totalRatio)} one by one`,
        baselineHeadline: `fresh context: ${x(sum(freshCosts) / sum(seqCosts), 2)} the forked total; naive parallel: worst child ${x(worst(naiveCosts, "ratioToFloor"))} floor, total ${x(sum(naiveCosts) / sum(warmCosts))} warm-first`,
        pass,
        params: {
          fixture: "48k",
          children: 5,
          daemons: 2,
          sim_ttft_ms: TTFT_MS,
          model: String(turn.request.model),
        },
        notes,
      };
    } finally {
      await cluster.stop();
    }
  },
};
