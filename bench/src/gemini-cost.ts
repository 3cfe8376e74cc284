// #13's Gemini row: five children of the 48k parent on daemons, the parent's prefix in one explicit
// `cachedContents` resource per fan-out (made by the first child, found by its siblings, named by
// every request), priced at Gemini 2.5 Flash's rates: input 1×, cached input 0.1×, the cache's
// creation 1× plus its storage for as long as it lives (60 s, the TTL forkd gives it, plus what each
// renewal adds: the storage the children's runs were billed, `cache_storage_token_seconds`).
import type { NatsForkSubagent } from "@forkd/client";
import type { ForkOutcome, LlmRequest } from "@forkd/core";
import { GeminiLlmClient } from "@forkd/llm";
import { type ForkPrefix, modelFacts } from "@forkd/protocol";
import type { RequestLogEntry } from "@forkd/sim";
import type { Child } from "./b13-provider-cost.js";
import { type Cluster, SIM_API_KEY } from "./cluster.js";
import { fanOutCompleted } from "./fan-out.js";
import { AUDIT_DIRECTIVES as DIRECTIVES, type ParentTurn, taggedDirective } from "./fixtures.js";
import { now, round } from "./stats.js";

const MODEL = "gemini-2.5-flash";
const RATIO_TARGET = 1.05;
const CACHES = "/v1beta/cachedContents";

/** Gemini 2.5 Flash's rates, as shares of its input price (forkd's model facts). */
function rates() {
  const facts = modelFacts(MODEL);
  if (facts?.cacheWriteMultiplier === undefined || facts.cacheStorageUsdPerMTokHour === undefined)
    throw new Error(`no Gemini cache prices for ${MODEL}`);
  return {
    read: facts.cacheReadMultiplier ?? 0.1,
    /** A token written: its creation (1×) and 60 s of storage. */
    write: facts.cacheWriteMultiplier,
    /** A token stored for one second. */
    storagePerSecond: facts.cacheStorageUsdPerMTokHour / 3600 / facts.inputUsdPerMTok,
  };
}

const promptOf = (entry: RequestLogEntry) =>
  (entry.usage?.input_tokens ?? 0) + (entry.usage?.cache_read_input_tokens ?? 0);
const total = (rows: { cost: number }[]) =>
  round(
    rows.reduce((t, r) => t + r.cost, 0),
    1,
  );

interface Scenario {
  children: Child[];
  /** The explicit caches made during the scenario: their tokens. */
  creations: number[];
  renewals: number;
  /** Storage bought by renewals, as the children's runs were billed it. @unit token-seconds */
  stored: number;
  wallMs: number;
}

/** Storage the runs of `outcomes` were billed for renewing their cache. @unit token-seconds */
const storedBy = (outcomes: ForkOutcome[]) =>
  outcomes.reduce(
    (t, o) => t + ((o.status === "completed" ? o.result.usage : o.usage).cache_storage_token_seconds ?? 0),
    0,
  );

/** What #13 reports for Gemini. */
export interface GeminiCosts {
  model: string;
  figures: Record<string, unknown>;
  baseline: Record<string, unknown>;
  headline: string;
  baselineHeadline: string;
  notes: string[];
  pass: boolean;
}

/**
 * Runs the Gemini scenarios on `cluster` (its daemons have the simulator's Gemini routes under
 * {@link SIM_API_KEY}); `seen` is filled by #13's request listener with each tagged child's first request.
 */
export async function geminiCosts(options: {
  cluster: Cluster;
  forks: NatsForkSubagent;
  turn: ParentTurn;
  seen: Map<string, Child>;
  log: (line: string) => void;
}): Promise<GeminiCosts> {
  const { cluster, forks, turn, seen } = options;
  const rate = rates();
  const prefix: ForkPrefix = { ...turn.prefix, params: { ...turn.prefix.params, model: MODEL } };
  const llm = new GeminiLlmClient({
    baseURL: cluster.sim.url,
    apiKey: SIM_API_KEY,
    retry: { maxRetries: 0 },
  });
  const parentRequest = { ...turn.request, model: MODEL } as unknown as LlmRequest;
  const base = { prefix, parent: { agent_id: "bench-parent" }, provider: { api: "gemini" as const } };
  const params = (tag: string, i: number) => ({
    directive: taggedDirective(tag, DIRECTIVES[i]!),
    label: tag,
  });

  // The benchmark's simulator keeps no log: its cache calls are collected as they end.
  const cacheCalls: RequestLogEntry[] = [];
  cluster.sim.on("request", (entry) => {
    if (entry.path.startsWith(CACHES)) cacheCalls.push(entry);
  });
  const scenario = async (
    name: string,
    launch: (tags: string[]) => Promise<ForkOutcome[]>,
  ): Promise<Scenario> => {
    cluster.sim.reset();
    cacheCalls.length = 0;
    // The parent's own turn, as its client sent it (the whole prompt: the parent has no cache).
    await llm.createMessage(parentRequest);
    const tags = DIRECTIVES.map((_, i) => `gemini-${name}-${i + 1}`);
    const started = now();
    const outcomes = await launch(tags);
    const wallMs = round(now() - started, 0);
    const children = tags.map((tag) => {
      const child = seen.get(tag);
      if (child === undefined || !child.entry.path.startsWith("/v1beta/models/"))
        throw new Error(`gemini ${name}: no generateContent request for ${tag}`);
      return child;
    });
    const creations = cacheCalls
      .filter((e) => e.path === CACHES && e.method === "POST" && e.status === 200)
      .map((e) => e.usage?.cache_creation_input_tokens ?? 0);
    const renewals = cacheCalls.filter((e) => e.path.startsWith(`${CACHES}/`) && e.method === "PATCH").length;
    cacheCalls.length = 0;
    return { children, creations, renewals, stored: storedBy(outcomes), wallMs };
  };
  const fanOut = (warmFirst: boolean) => (tags: string[]) =>
    fanOutCompleted(
      forks,
      base,
      tags.map((tag, i) => params(tag, i)),
      { warmFirst, what: "gemini" },
    );
  options.log("gemini: one by one");
  const oneByOne = await scenario("seq", async (tags) => {
    const outcomes: ForkOutcome[] = [];
    for (const [i, tag] of tags.entries()) {
      const outcome = await forks.fork({ ...base, ...params(tag, i) }).result();
      if (outcome.status !== "completed")
        throw new Error(`gemini: child ${tag} ended ${outcome.status}: ${JSON.stringify(outcome)}`);
      outcomes.push(outcome);
    }
    return outcomes;
  });
  options.log("gemini: all at once (warm-first)");
  const warm = await scenario("warm", fanOut(true));
  options.log("gemini: naive parallel");
  const naive = await scenario("naive", fanOut(false));

  // The floor of a fan-out under Gemini's guaranteed prices (implicit caching promises nothing, so
  // no floor counts on it): the shared prefix S written once at 1× and stored only while the
  // children need it (the scenario's wall time), each child reading S at 0.1× and paying its own
  // delta at 1×; or, if cheaper, no cache at all (every prompt at 1×).
  const price = (s: Scenario) => {
    const shared = Math.max(...s.creations, 0);
    const children = s.children.map((child, i) => {
      const prompt = promptOf(child.entry);
      const cached = child.entry.usage?.cache_read_input_tokens ?? 0;
      const cost = prompt - cached + rate.read * cached;
      const floor = prompt - shared + rate.read * shared;
      return {
        child: i + 1,
        prompt,
        cached,
        cost: round(cost, 1),
        floor: round(floor, 1),
        ratioToFloor: round(cost / floor, 4),
      };
    });
    // The creations (1× and their first TTL of storage) and what renewals added, as the runs were billed.
    const cacheCost =
      s.creations.reduce((t, tokens) => t + tokens * rate.write, 0) + s.stored * rate.storagePerSecond;
    const cacheFloor = shared * (1 + rate.storagePerSecond * (s.wallMs / 1000));
    const noCache = children.reduce((t, c) => t + c.prompt, 0);
    const groupFloor = Math.min(cacheFloor + total(children.map((c) => ({ cost: c.floor }))), noCache);
    const groupCost = total(children) + cacheCost;
    return {
      children,
      caches_created: s.creations.length,
      cache_tokens: shared,
      renewals: s.renewals,
      renewal_storage_token_seconds: round(s.stored, 1),
      cache_cost: round(cacheCost, 1),
      cache_floor: round(cacheFloor, 1),
      total: round(groupCost, 1),
      floor: round(groupFloor, 1),
      ratioToFloor: round(groupCost / groupFloor, 4),
      wall_ms: s.wallMs,
    };
  };
  const seq = price(oneByOne);
  const all = price(warm);
  const naiveCosts = price(naive);
  const noFork = oneByOne.children.map((child) => ({ cost: promptOf(child.entry) }));
  const worst = Math.max(...[...seq.children, ...all.children].map((c) => c.ratioToFloor));
  const ok = seq.ratioToFloor <= RATIO_TARGET && all.ratioToFloor <= RATIO_TARGET && worst <= RATIO_TARGET;
  const notes = [
    `gemini (${MODEL}): shared prefix ${all.cache_tokens} tokens in one explicit cache; fan-out totals with the cache's creation and storage: one by one ${seq.total} (floor ${seq.floor}, ${seq.caches_created} cache), all at once ${all.total} (floor ${all.floor}, ${all.caches_created} cache), naive parallel ${naiveCosts.total} (${naiveCosts.caches_created} caches); no fork ${total(noFork)} input-token equivalents. Wall time one by one ${oneByOne.wallMs} ms, all at once ${warm.wallMs} ms.`,
    `Gemini floor: the prefix written once at 1× and stored only for the scenario's wall time (${rate.storagePerSecond.toExponential(3)} input-token equivalents per token-second at ${MODEL}'s $1.00/MTok-hour storage and $0.30/MTok input), each child reading it at 0.1× and paying its own delta at 1× (or every prompt at 1× if that were cheaper); implicit caching is not counted (Google promises no hit). forkd pays the creation and 60 s of storage (its TTL; ${rate.write.toFixed(4)}× a token written) plus the storage each renewal adds (billed once, to the run whose request renewed, as cache_storage_token_seconds in its usage: ${seq.renewal_storage_token_seconds} / ${all.renewal_storage_token_seconds} / ${naiveCosts.renewal_storage_token_seconds} token-seconds here, one by one / all at once / naive), so its excess over the floor is the storage of the unused rest of the TTL. Naive parallel (no warm-first): the daemons agree on one cache through their bucket.`,
  ];
  if (!ok)
    notes.push(
      `MISSED (gemini): fan-out ${seq.ratioToFloor}× / ${all.ratioToFloor}×, worst child ${worst}×.`,
    );
  return {
    model: MODEL,
    figures: { one_by_one: seq, all_at_once: all, rates: rate },
    baseline: {
      no_fork: noFork,
      total_no_fork: total(noFork),
      naive_parallel: naiveCosts,
    },
    headline: `gemini: fan-out ${seq.ratioToFloor.toFixed(3)}× floor one by one, ${all.ratioToFloor.toFixed(3)}× all at once (cache creation and storage included; worst child ${worst.toFixed(3)}×)`,
    baselineHeadline: `gemini: no fork ${(total(noFork) / all.total).toFixed(2)}× the forked total`,
    notes,
    pass: ok,
  };
}
