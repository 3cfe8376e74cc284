// `forkd demo`: NATS (found or started), the simulator, three in-process daemons, the parent's own
// turn, five children forked warm-first and shown live, the same children without forking, and the
// bill. Everything it starts is stopped and removed at the end, on error and on Ctrl-C.
import { createWriteStream } from "node:fs";
import { mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline/promises";
import { setTimeout as delay } from "node:timers/promises";
import type { NatsForkSubagent } from "@forkd/client";
import {
  buildForkedRequest,
  computeCacheKey,
  costOfTokens,
  defaultPricingTable,
  derivedPromptCacheKey,
  type LlmClient,
  type LlmRequest,
} from "@forkd/core";
import { createDaemonLogger, loadDaemonConfig, startDaemon } from "@forkd/daemon";
import { AnthropicLlmClient, GeminiLlmClient, OpenAiLlmClient } from "@forkd/llm";
import { forkSubjects, type ProviderUsage } from "@forkd/protocol";
import { newSecret } from "@forkd/protocol/internal";
import type { Sim } from "@forkd/sim";
import { startWebServer } from "@forkd/web";
import {
  type Child,
  type ChildResult,
  followChildren,
  type PlannedChild,
  planChildren,
} from "../children.js";
import type { CommandContext } from "../context.js";
import {
  type ChildBill,
  cacheShareOf,
  type DemoBill,
  lineOf,
  makeBill,
  renderBill,
  type TokenLine,
} from "../demo/bill.js";
import { demoDirectives } from "../demo/directives.js";
import { type DemoNats, findNats } from "../demo/find-nats.js";
import { CleanupStack } from "../demo/stack.js";
import { withoutCacheControl } from "../demo/unforked.js";
import { CliError, UsageError } from "../errors.js";
import { formatElapsed, formatInteger, formatUsd } from "../format.js";
import { whenAborted } from "../interrupt.js";
import { isInteractive, type Style, styleFor, writeLine } from "../io.js";
import { connectTarget, natsTarget, openSubagent } from "../nats.js";
import {
  COMMON_FLAGS,
  expectPositionals,
  type ParsedCommandLine,
  parseCommandLine,
  parseInteger,
} from "../options.js";
import { type ParentTurn, parentTurnOf, readParentTurn } from "../parent-turn.js";
import { type CacheMissSummary, cacheMissOf } from "../run-tracker.js";
import { LATENCY_FLAGS, latencyOf } from "../sim-latency.js";
import { DEFAULT_WEB_PORT } from "./web.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  from: { type: "string" },
  children: { type: "string" },
  daemons: { type: "string" },
  ...LATENCY_FLAGS,
  model: { type: "string" },
  nats: { type: "string" },
  "start-nats": { type: "boolean" },
  log: { type: "string" },
  json: { type: "boolean" },
  real: { type: "boolean" },
  yes: { type: "boolean" },
  web: { type: "boolean" },
  "web-port": { type: "string" },
  provider: { type: "string" },
} as const;

/** The provider APIs the demo runs on; the OpenAI and Gemini ones on the simulator only. */
const DEMO_PROVIDERS = ["anthropic", "openai-chat", "openai-responses", "gemini"] as const;
type DemoProvider = (typeof DEMO_PROVIDERS)[number];
/** The model of an OpenAI demo when `--model` names none (the fixtures are Anthropic turns). */
const DEMO_OPENAI_MODEL = "gpt-5";
const DEMO_GEMINI_MODEL = "gemini-2.5-flash";

/** The simulator's API key of the parent and the daemons: one cache scope, as one Anthropic workspace. */
const DEMO_API_KEY = "sk-forkd-demo";
/** With `--web`, how long the demo waits for a page to load before it forks. @unit ms */
const WEB_WAIT_MS = 30_000;
/** Output limit of every demo request (not part of the cache key). */
const DEMO_MAX_TOKENS = 1024;

interface DemoSettings {
  children: number;
  daemons: number;
  ttftMs: number;
  tokensPerSecond: number;
  real: boolean;
  json: boolean;
  /** `--web`: the port to serve the web view on; undefined without `--web`. */
  webPort: number | undefined;
  provider: DemoProvider;
}

function settingsOf(values: ParsedCommandLine<typeof OPTIONS>["values"]): DemoSettings {
  const real = values.real === true;
  if (real && (values.ttft !== undefined || values.tps !== undefined)) {
    throw new UsageError("--ttft and --tps set the simulator's latency; with --real there is no simulator");
  }
  const children =
    values.children === undefined ? 5 : parseInteger("children", values.children, { min: 1, max: 50 });
  const daemons =
    values.daemons === undefined ? 3 : parseInteger("daemons", values.daemons, { min: 1, max: 16 });
  const latency = latencyOf(values);
  const provider = (values.provider ?? "anthropic") as DemoProvider;
  if (!DEMO_PROVIDERS.includes(provider)) {
    throw new UsageError(`--provider must be one of ${DEMO_PROVIDERS.join(", ")}, got ${values.provider}`);
  }
  if (real && provider !== "anthropic") {
    throw new UsageError(
      "--real runs on the Anthropic API only; the OpenAI and Gemini providers run on the simulator",
    );
  }
  return {
    provider,
    children,
    daemons,
    ttftMs: latency.ttftMs ?? 300,
    tokensPerSecond: latency.tokensPerSecond ?? 400,
    real,
    json: values.json === true,
    webPort:
      values.web === true
        ? values["web-port"] === undefined
          ? DEFAULT_WEB_PORT
          : parseInteger("web-port", values["web-port"], { min: 0, max: 65535 })
        : undefined,
  };
}

/** A rough price of the whole demo against the real API, for the warning. @unit USD */
function estimateRealCost(turn: ParentTurn, children: number): number | null {
  const pricing = defaultPricingTable.lookup(turn.prefix.params.model);
  if (pricing === undefined) return null;
  const tokens = turn.approxTokens;
  const none = { input_tokens: 0, cache_write_5m_tokens: 0, cache_write_1h_tokens: 0, cache_read_tokens: 0 };
  // The parent writes its prefix; each child reads it and adds a ~1k directive; each unforked
  // comparison request sends it all again.
  const parent = costOfTokens(pricing, { ...none, cache_write_5m_tokens: tokens, output_tokens: 500 });
  const forked = costOfTokens(pricing, {
    ...none,
    cache_read_tokens: tokens,
    input_tokens: 1000,
    output_tokens: 300,
  });
  const unforked = costOfTokens(pricing, { ...none, input_tokens: tokens + 1000, output_tokens: 300 });
  return parent + children * (forked + unforked);
}

async function confirmReal(context: CommandContext, turn: ParentTurn, children: number, yes: boolean) {
  const estimate = estimateRealCost(turn, children);
  writeLine(
    context.io.stderr,
    `--real: this sends ${2 * children + 1} requests of ~${formatInteger(turn.approxTokens)} tokens to the Anthropic API ` +
      `(${turn.prefix.params.model}) and costs about ${estimate === null ? "an unknown amount" : formatUsd(estimate)}.`,
  );
  if (yes) return;
  if (context.io.stdin.isTTY !== true) {
    throw new UsageError("--real needs --yes when stdin is not a terminal (it spends money)");
  }
  const prompt = createInterface({ input: context.io.stdin, output: process.stderr });
  try {
    const answer = await prompt.question("Continue? [y/N] ");
    if (!/^y(es)?$/i.test(answer.trim()))
      throw new CliError("interrupted", "not confirmed; nothing was sent");
  } finally {
    prompt.close();
  }
}

/** Where the demo's parts run. */
interface DemoStack {
  nats: DemoNats;
  sim: Sim | undefined;
  /** The subject prefix of the demo's streams and buckets. */
  prefix: string;
  forks: NatsForkSubagent;
  /** The temp dir holding each daemon's workspace. */
  workspace: string;
  daemonIds: string[];
  /** An LLM client with this API key (the simulator's cache is scoped by key). */
  llm(apiKey: string): LlmClient;
  /** The web view's URL, with `--web`. */
  webUrl: string | undefined;
  /** Resolves when a page of the web view was opened, with `--web`. */
  webVisited: Promise<void> | undefined;
  /** An LLM client with this API key (the simulator's cache is scoped by key) and OpenAI `prompt_cache_key`. */
  llm(apiKey: string, promptCacheKey?: string): LlmClient;
}

/** Starts NATS (or finds it), the simulator, the daemons and the fork client; registers their cleanup. */
async function startStack(
  settings: DemoSettings,
  values: ParsedCommandLine<typeof OPTIONS>["values"],
  context: CommandContext,
  cleanup: CleanupStack,
  note: (line: string) => void,
): Promise<DemoStack> {
  const env = context.io.env;
  // NATS and the simulator start side by side; whichever started is stopped even if the other failed.
  // The web view needs NATS's WebSocket port: a server the demo starts has one; a server the user
  // names must say where its own is (FORKD_NATS_WS_URL).
  const web = settings.webPort !== undefined;
  const named = values["start-nats"] ? undefined : (values.nats ?? env.NATS_URL);
  if (web && named !== undefined && !env.FORKD_NATS_WS_URL) {
    throw new UsageError("--web with a NATS server of yours needs its WebSocket URL in FORKD_NATS_WS_URL", {
      hint: "or leave --nats and NATS_URL out: the demo then starts a nats-server with WebSocket on",
    });
  }
  const [natsStarted, simStarted] = await Promise.allSettled([
    findNats({
      url: named,
      forceStart: values["start-nats"] === true || (web && named === undefined),
      signal: context.interruption.signal,
      note,
      websocket: web,
    }),
    settings.real
      ? Promise.resolve(undefined)
      : import("@forkd/sim").then(({ startSim }) =>
          startSim({
            port: 0,
            latency: { ttftMs: settings.ttftMs, tokensPerSecond: settings.tokensPerSecond },
          }),
        ),
  ]);
  if (natsStarted.status === "fulfilled") cleanup.defer("the NATS server", () => natsStarted.value.stop());
  if (simStarted.status === "fulfilled" && simStarted.value !== undefined) {
    const started = simStarted.value;
    cleanup.defer("the simulator", () => started.close());
  }
  if (natsStarted.status === "rejected") throw natsStarted.reason;
  if (simStarted.status === "rejected") throw simStarted.reason;
  const nats = natsStarted.value;
  const sim = simStarted.value;
  // On a server the demo did not start, its streams and buckets get a prefix of their own, so that
  // no other daemon there picks up its specs; they are deleted at the end.
  const prefix = nats.own ? "agent" : `forkd_demo_${process.pid}_${Date.now().toString(36)}`;
  const llm = (apiKey: string, promptCacheKey?: string): LlmClient =>
    sim === undefined
      ? new AnthropicLlmClient({ retry: { maxRetries: 2 } })
      : settings.provider === "anthropic"
        ? new AnthropicLlmClient({ baseURL: sim.url, apiKey, retry: { maxRetries: 0 } })
        : settings.provider === "gemini"
          ? new GeminiLlmClient({ baseURL: sim.url, apiKey, retry: { maxRetries: 0 } })
          : new OpenAiLlmClient({
              api: settings.provider === "openai-chat" ? "chat" : "responses",
              baseURL: `${sim.url}/v1`,
              apiKey,
              retry: { maxRetries: 0 },
            }).forRun({ promptCacheKey });

  // One temp dir; each daemon works in a folder of its own in it, as if on a host of its own.
  const workspace = await mkdtemp(join(tmpdir(), "forkd-demo-"));
  cleanup.tempDir(workspace);
  const logStream = values.log === undefined ? undefined : createWriteStream(values.log, { flags: "a" });
  if (logStream !== undefined) {
    cleanup.defer("the log file", () => new Promise<void>((resolve) => logStream.end(() => resolve())));
  }
  const nc = await connectTarget(natsTarget({ nats: [nats.url], prefix }, {}), { name: "forkd-demo" });
  cleanup.defer("the NATS connection", () => nc.close());
  // The demo aborts only its own forks: a key of its own, not the user's.
  const forks = await openSubagent(nc, prefix, newSecret());
  cleanup.defer("the fork client", () => forks.close());
  if (!nats.own) {
    // Registered before the daemons, so it runs after they have stopped.
    cleanup.defer("the demo's streams", async () => {
      const subjects = forkSubjects(prefix);
      const streams = [
        subjects.streams.specs,
        subjects.streams.events,
        subjects.bucketStreams.runs,
        subjects.bucketStreams.daemons,
        subjects.bucketStreams.prefixes,
      ];
      for (const stream of streams) await forks.resources.jsm.streams.delete(stream).catch(() => false);
    });
  }
  const daemonIds = Array.from({ length: settings.daemons }, (_, i) => `demo-${i + 1}`);
  await Promise.all(
    daemonIds.map(async (daemonId) => {
      const daemonWorkspace = join(workspace, daemonId);
      await mkdir(daemonWorkspace);
      const config = loadDaemonConfig({
        env: {},
        overrides: {
          daemonId,
          nats: { servers: [nats.url] },
          prefix,
          workspace: daemonWorkspace,
          concurrency: 2,
          heartbeatMs: 1000,
          // The children answer from the conversation; no shell on this machine for a real model.
          tools: { bash: "off" },
          logLevel: logStream === undefined ? "silent" : "info",
          logFormat: "json",
          ...(sim === undefined
            ? {}
            : {
                llm: {
                  openaiBaseURL: `${sim.url}/v1`,
                  openaiApiKey: DEMO_API_KEY,
                  geminiBaseURL: sim.url,
                  geminiApiKey: DEMO_API_KEY,
                },
              }),
        },
      });
      const logger = createDaemonLogger({
        level: config.logLevel,
        format: "json",
        daemonId,
        destination: logStream,
      });
      const running = await startDaemon(config, { llm: llm(DEMO_API_KEY), logger, version: context.version });
      cleanup.defer(`daemon ${daemonId}`, () => running.stop({ graceMs: 0 }));
    }),
  );

  let webUrl: string | undefined;
  let webVisited: Promise<void> | undefined;
  if (web) {
    const servers =
      nats.websocketUrl !== undefined ? [nats.websocketUrl] : (env.FORKD_NATS_WS_URL ?? "").split(",");
    const page = await startWebServer({
      page: { servers, prefix },
      port: settings.webPort ?? DEFAULT_WEB_PORT,
    });
    cleanup.defer("the web view", () => page.close());
    webUrl = page.url;
    webVisited = page.visited;
  }

  return { nats, sim, prefix, forks, workspace, daemonIds, llm, webUrl, webVisited };
}

/**
 * The same work without forking: each child's whole first request (the bytes its daemon sent), as one
 * fresh request with no cache marker under an API key of its own (a cold cache scope in the
 * simulator): what an agent that hands a sub-agent its whole context, instead of forking, pays.
 */
async function measureUnforked(
  stack: DemoStack,
  turn: ParentTurn,
  planned: readonly PlannedChild[],
  results: readonly ChildResult[],
  signal: AbortSignal,
): Promise<TokenLine[]> {
  return Promise.all(
    results.map(async (result) => {
      const child = planned[result.child.index - 1]!;
      const { request } = buildForkedRequest(turn.prefix, {
        runId: result.child.handle.runId,
        directive: child.directive,
        forkCall: child.forkCall,
        maxTokens: DEMO_MAX_TOKENS,
      });
      const llm = stack.llm(`${DEMO_API_KEY}-fresh-${result.child.index}`);
      const response = await llm.createMessage(withoutCacheControl(request), { signal });
      return lineOf(turn.prefix.params.model, [response.usage]);
    }),
  );
}

function childBill(model: string, result: ChildResult): ChildBill {
  const usages: ProviderUsage[] = [];
  let daemonId: string | undefined;
  let cacheMiss: CacheMissSummary | undefined;
  for (const event of result.events) {
    if (event.type === "llm.message") usages.push(event.usage);
    if (event.type === "accepted") daemonId = event.daemon_id;
    if (event.type === "cache.break") cacheMiss = cacheMissOf(event);
  }
  const outcome = result.outcome;
  return {
    ...lineOf(model, usages),
    index: result.child.index,
    label: result.child.label,
    runId: result.child.handle.runId,
    status: outcome.status,
    daemonId,
    durationMs: outcome.status === "completed" ? outcome.result.duration_ms : undefined,
    cacheMiss,
  };
}

function lineJson(line: TokenLine) {
  return {
    input_tokens: line.input,
    cache_write_tokens: line.cacheWrite,
    cache_read_tokens: line.cacheRead,
    output_tokens: line.output,
    cost_usd: line.costUsd,
  };
}

/** The bill as JSON (snake_case, raw numbers). */
function billJson(bill: DemoBill, stack: DemoStack, elapsedMs: number) {
  return {
    model: bill.model,
    nats: stack.nats.url,
    provider: stack.sim?.url ?? "anthropic",
    parent: { ...lineJson(bill.parent), duration_ms: bill.parent.durationMs },
    children: bill.children.map((child) => ({
      child: child.index,
      label: child.label,
      run_id: child.runId,
      status: child.status,
      daemon_id: child.daemonId ?? null,
      duration_ms: child.durationMs ?? null,
      ...lineJson(child),
      cache_share: cacheShareOf(child),
      cache_miss:
        child.cacheMiss === undefined
          ? null
          : {
              cause: child.cacheMiss.cause,
              missed_tokens: child.cacheMiss.missedTokens ?? null,
              cost_usd: child.cacheMiss.costUsd ?? null,
              provider_reason: child.cacheMiss.providerReason ?? null,
            },
    })),
    forked: lineJson(bill.forked),
    unforked: { ...lineJson(bill.unforked), children: bill.unforkedChildren.map(lineJson) },
    saving_usd: bill.savingUsd,
    saving_share: bill.savingShare,
    elapsed_ms: elapsedMs,
  };
}

function describeStack(stack: DemoStack, settings: DemoSettings, env: NodeJS.ProcessEnv): string[] {
  return [
    `NATS: ${stack.nats.url} — ${stack.nats.how}`,
    stack.sim === undefined
      ? `model provider: the Anthropic API${env.ANTHROPIC_BASE_URL ? ` at ${env.ANTHROPIC_BASE_URL}` : ""} (real tokens, real money)`
      : `model provider: simulator at ${stack.sim.url} (first token after ${settings.ttftMs} ms, ${settings.tokensPerSecond} tokens/s)`,
    `daemons: ${stack.daemonIds.join(", ")} (in this process; workspaces in ${stack.workspace})`,
  ];
}

async function loadTurn(values: ParsedCommandLine<typeof OPTIONS>["values"]): Promise<ParentTurn> {
  let turn: ParentTurn;
  if (values.from !== undefined) {
    turn = await readParentTurn(values.from);
    // The demo renders the parent's conversation for the provider it picks; a captured turn of
    // another API is forked in its own bytes, which only that API takes.
    if (turn.prefix.native !== undefined)
      throw new UsageError(
        `${values.from} holds a turn of the ${turn.prefix.native.api} API; the demo forks Anthropic-format turns (fork this one with \`forkd fork --from\`)`,
      );
  } else {
    const { loadFixture, fixturePath } = await import("@forkd/fixtures");
    turn = parentTurnOf(await loadFixture("48k"), fixturePath("48k"));
  }
  if (values.model !== undefined) turn.prefix.params.model = values.model;
  else if (values.provider === "gemini") turn.prefix.params.model = DEMO_GEMINI_MODEL;
  else if (values.provider !== undefined && values.provider !== "anthropic")
    turn.prefix.params.model = DEMO_OPENAI_MODEL;
  return turn;
}

/** Runs the demo. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const startedAt = Date.now();
  const { values, positionals } = parseCommandLine("demo", args, OPTIONS);
  expectPositionals("demo", positionals, { min: 0, max: 0, names: "" });
  const settings = settingsOf(values);
  const env = context.io.env;
  if (settings.real && !env.ANTHROPIC_API_KEY) {
    throw new UsageError("--real needs ANTHROPIC_API_KEY in the environment");
  }
  const out = context.io.stdout;
  const style: Style = styleFor(out, env);
  const say = (line: string) => {
    if (!settings.json) writeLine(out, line);
  };
  const note = (line: string) => writeLine(context.io.stderr, style.dim(line));
  const turn = await loadTurn(values);
  const model = turn.prefix.params.model;
  if (settings.real) await confirmReal(context, turn, settings.children, values.yes === true);

  const signal = context.interruption.signal;
  const children: Child[] = [];
  await using cleanup = new CleanupStack((what, error) => {
    if (context.verbose) note(`cleanup of ${what} failed: ${(error as Error).message}`);
  });
  try {
    const n = settings.children;
    say(
      style.bold(
        `forkd demo: ${n} ${n === 1 ? "child" : "children"} of a ~${formatInteger(turn.approxTokens)}-token parent turn (${turn.source}), ${model}`,
      ),
    );
    const stack = await startStack(settings, values, context, cleanup, note);
    for (const line of describeStack(stack, settings, env)) say(line);
    if (stack.webUrl !== undefined) {
      // Said on stderr too, so that --json keeps its one document on stdout.
      writeLine(
        context.io.stderr,
        `web view: ${stack.webUrl} — open it to follow the children live; the demo forks once a page has loaded (or after ${WEB_WAIT_MS / 1000} s: the page replays every run from its first event anyway)`,
      );
      await Promise.race([stack.webVisited, delay(WEB_WAIT_MS, undefined, { signal })]);
    }

    // 1. The parent's own turn: the request that wrote the cache the children read.
    const parentRequest = { ...turn.prefix.params, max_tokens: DEMO_MAX_TOKENS } as LlmRequest;
    // On OpenAI the parent sends the prompt_cache_key its children derive, so they land on its machine.
    const parentKey =
      settings.provider === "anthropic" || settings.provider === "gemini"
        ? undefined
        : derivedPromptCacheKey(computeCacheKey(turn.prefix.params, turn.prefix.betas).hash);
    const parentResponse = await stack.llm(DEMO_API_KEY, parentKey).createMessage(parentRequest, { signal });
    const parent = { ...lineOf(model, [parentResponse.usage]), durationMs: parentResponse.durationMs };
    say(
      `parent turn sent once (it writes the prompt cache): in ${formatInteger(parent.input)}, cache write ${formatInteger(parent.cacheWrite)}, ` +
        `cache read ${formatInteger(parent.cacheRead)}, out ${formatInteger(parent.output)}, ${formatUsd(parent.costUsd)}, ${formatElapsed(parent.durationMs)}`,
    );

    // 2. The children, warm-first, shown live.
    const directives = demoDirectives(n, stack.sim !== undefined);
    const planned = planChildren(
      turn,
      directives.map((entry) => entry.directive),
      { fallbackLabels: directives.map((entry) => entry.name) },
    );
    // The reply carries the parent's usage, as a recorded provider response does: each child's
    // cache.break then measures its reads against what the parent's request cached.
    const prefix =
      settings.provider === "anthropic" && turn.prefix.reply !== undefined
        ? { ...turn.prefix, reply: { ...turn.prefix.reply, usage: parentResponse.usage } }
        : turn.prefix;
    const handles = stack.forks.fanOut(
      {
        prefix,
        parent: { agent_id: "forkd-demo" },
        overrides: { max_tokens: DEMO_MAX_TOKENS },
        limits: { max_turns: 1 },
        ...(settings.provider === "anthropic" ? {} : { provider: { api: settings.provider } }),
      },
      planned,
      { warmFirst: true },
    );
    for (const [i, handle] of handles.entries()) {
      children.push({ index: i + 1, label: planned[i]!.label, forkCall: planned[i]!.forkCall, handle });
    }
    say(
      `forking ${n} ${n === 1 ? "child" : "children"} warm-first: the first writes the shared entry, the others start once its response has begun`,
    );
    const followed = await followChildren(children, {
      mode: settings.json ? "none" : isInteractive(out, env) ? "live" : "plain",
      out,
      style,
      signal,
    });
    if (followed.unfinished.length > 0) throw new CliError("interrupted", "interrupted");
    const results = [...followed.results].sort((a, b) => a.child.index - b.child.index);

    // 3. The same work without forking, then the bill.
    say("without forking: sending each child's whole context again as a fresh request, without cache…");
    const unforkedChildren = await measureUnforked(stack, turn, planned, results, signal);
    const bill = makeBill({
      model,
      parent,
      children: results.map((result) => childBill(model, result)),
      unforkedChildren,
    });
    if (settings.json) writeLine(out, JSON.stringify(billJson(bill, stack, Date.now() - startedAt), null, 2));
    else {
      writeLine(out);
      for (const line of renderBill(bill, style)) writeLine(out, line);
      writeLine(
        out,
        style.dim(`finished in ${formatElapsed(Date.now() - startedAt)}; stopping what the demo started`),
      );
    }
    const exitCode = results.every((result) => result.outcome.status === "completed") ? 0 : 1;
    if (stack.webUrl !== undefined) {
      writeLine(context.io.stderr, `the web view stays up at ${stack.webUrl}; Ctrl-C stops everything`);
      await whenAborted(signal);
    }
    return exitCode;
  } catch (error) {
    if (!context.interruption.interrupted) throw error;
    await Promise.all(
      children.map((child) => child.handle.abort("forkd demo was interrupted").catch(() => undefined)),
    );
    writeLine(context.io.stderr, "interrupted: stopping everything the demo started");
    return 130;
  }
}
