// Assembles a daemon from its configuration: NATS connection, Anthropic client, tools, logger,
// metrics; and the process behaviour: SIGTERM/SIGINT drain, exit codes.

import type { LlmClient } from "@forkd/core";
import { AnthropicLlmClient, GeminiLlmClient, type OpenAiApi, OpenAiLlmClient } from "@forkd/llm";
import { forkSubjects } from "@forkd/protocol";
import type { DaemonConfig } from "./config.js";
import { secretsOfConfig } from "./config-secrets.js";
import { ForkDaemon } from "./daemon.js";
import { createDaemonLogger, type DaemonLogger } from "./logger.js";
import { createDaemonMetrics, serveMetrics } from "./metrics.js";
import { connectNats } from "./nats-connection.js";
import { daemonRunTools, requireSandbox } from "./run-tools.js";
import { providerKeyId, SharedThrottle } from "./shared-throttle.js";
import { registerDaemonSecrets } from "./tools/secrets.js";

/** A started daemon and how to stop it. */
export interface RunningDaemon {
  daemon: ForkDaemon;
  logger: DaemonLogger;
  metricsUrl: string | undefined;
  /** Drains the daemon, closes the metrics server and the NATS connection. */
  stop(options?: { graceMs?: number }): Promise<void>;
}

/**
 * Connects and starts a daemon for `config`. The LLM client defaults to the Anthropic SDK with its
 * usual `ANTHROPIC_BASE_URL` / `ANTHROPIC_API_KEY` (so the simulator and the real API work alike).
 */
export async function startDaemon(
  config: DaemonConfig,
  options: {
    llm?: LlmClient;
    /**
     * The Gemini client in place of the one the configuration makes (its key still names the key
     * id the calls count under): tests give one on the simulator's clock.
     */
    gemini?: GeminiLlmClient;
    logger?: DaemonLogger;
    version?: string;
  } = {},
): Promise<RunningDaemon> {
  const logger =
    options.logger ??
    createDaemonLogger({ level: config.logLevel, format: config.logFormat, daemonId: config.daemonId });
  // Before anything connects: a daemon that cannot contain Bash does not start.
  const sandbox = requireSandbox(config, logger);
  // Its configuration's passwords, tokens and key files join its environment's secrets: no event carries them.
  registerDaemonSecrets(secretsOfConfig(config));
  const nc = await connectNats(config);
  const metrics = createDaemonMetrics();
  const metricsServer =
    config.metricsPort === undefined
      ? undefined
      : await serveMetrics(metrics, { port: config.metricsPort, host: config.metricsHost });
  const subjects = forkSubjects(config.prefix);
  // The provider's "slow down" holds every daemon of the account, not only the one it reached.
  const keyId = providerKeyId(
    config.llm.baseURL ?? process.env.ANTHROPIC_BASE_URL,
    config.llm.apiKey ?? process.env.ANTHROPIC_API_KEY,
  );
  const throttle =
    options.llm === undefined
      ? new SharedThrottle({
          nc,
          subject: subjects.providerThrottle,
          daemonId: config.daemonId,
          keyId,
          logger,
          metrics,
        })
      : undefined;
  const llm =
    options.llm ??
    new AnthropicLlmClient({
      baseURL: config.llm.baseURL,
      apiKey: config.llm.apiKey,
      timeout: config.llm.timeoutMs,
      retry: { maxRetries: config.llm.maxRetries },
      logger,
      throttle,
    });
  const openai = openAiClients(config, logger);
  const gemini = geminiClient(config, logger, options.gemini);
  const daemon = new ForkDaemon({
    config,
    nc,
    logger,
    metrics,
    llm,
    ...(openai === undefined ? {} : { openai: openai.clients }),
    ...(gemini === undefined ? {} : { gemini: gemini.client }),
    tools: daemonRunTools({ config, nc, subjects, logger, sandbox }),
    version: options.version,
    providerKeyIds: {
      anthropic: keyId,
      ...(openai === undefined
        ? {}
        : {
            "openai-chat": openai.keyId,
            "openai-responses": openai.keyId,
          }),
      ...(gemini === undefined ? {} : { gemini: gemini.keyId }),
    },
  });
  try {
    await daemon.start();
  } catch (error) {
    throttle?.close();
    await metricsServer?.close();
    await nc.close();
    throw error;
  }
  return {
    daemon,
    logger,
    metricsUrl: metricsServer?.url,
    stop: async (stopOptions = {}) => {
      await daemon.shutdown(stopOptions);
      throttle?.close();
      await metricsServer?.close();
      await nc.drain().catch(() => nc.close());
    },
  };
}

/**
 * Runs a daemon until SIGTERM or SIGINT, then drains (a second signal stops at once). Resolves with
 * the process exit code.
 */
export async function runDaemonProcess(
  config: DaemonConfig,
  options: { version?: string } = {},
): Promise<number> {
  const running = await startDaemon(config, options);
  running.logger.info({ metrics: running.metricsUrl, nats: config.nats.servers }, "forkd daemon started");
  return new Promise<number>((resolveExit) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        running.logger.warn({ signal }, "second signal: stopping without waiting");
        resolveExit(130);
        return;
      }
      stopping = true;
      running.logger.info({ signal, graceMs: config.drainGraceMs }, "draining");
      running.stop().then(
        () => resolveExit(0),
        (error: unknown) => {
          running.logger.error({ err: error }, "drain failed");
          resolveExit(1);
        },
      );
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}

/**
 * The daemon's OpenAI clients, one per API, made on first use, when an OpenAI key is configured
 * (`llm.openaiApiKey`, else `OPENAI_API_KEY`); the base URL is `llm.openaiBaseURL`, else the SDK's
 * `OPENAI_BASE_URL`. With them the key id their calls count under (`callLimitPerKey`).
 */
function openAiClients(
  config: DaemonConfig,
  logger: DaemonLogger,
): { clients: (api: OpenAiApi) => OpenAiLlmClient; keyId: string } | undefined {
  const apiKey = config.llm.openaiApiKey ?? process.env.OPENAI_API_KEY;
  if (apiKey === undefined || apiKey === "") return undefined;
  const baseURL = config.llm.openaiBaseURL ?? process.env.OPENAI_BASE_URL;
  const clients = new Map<OpenAiApi, OpenAiLlmClient>();
  const keyId = providerKeyId(baseURL ?? "https://api.openai.com/v1", apiKey);
  const clientOf = (api: OpenAiApi) => {
    let client = clients.get(api);
    if (client === undefined) {
      client = new OpenAiLlmClient({
        api,
        apiKey,
        baseURL,
        timeout: config.llm.timeoutMs,
        retry: { maxRetries: config.llm.maxRetries },
        logger,
      });
      clients.set(api, client);
    }
    return client;
  };
  return { clients: clientOf, keyId };
}

/**
 * The daemon's Gemini client, when a Gemini key is configured (`llm.geminiApiKey`, else
 * `GEMINI_API_KEY`); the base URL is `llm.geminiBaseURL`, else `GOOGLE_GEMINI_BASE_URL`. One client
 * for every run: its children of one parent share one lookup of their fan-out's explicit cache.
 */
function geminiClient(
  config: DaemonConfig,
  logger: DaemonLogger,
  given?: GeminiLlmClient,
): { client: GeminiLlmClient; keyId: string } | undefined {
  const apiKey = config.llm.geminiApiKey ?? process.env.GEMINI_API_KEY;
  if (apiKey === undefined || apiKey === "") return undefined;
  const baseURL = config.llm.geminiBaseURL ?? process.env.GOOGLE_GEMINI_BASE_URL;
  const client =
    given ??
    new GeminiLlmClient({
      apiKey,
      baseURL,
      timeout: config.llm.timeoutMs,
      retry: { maxRetries: config.llm.maxRetries },
      logger,
    });
  // The scope of a call limit per provider key (call-limits.ts).
  return { client, keyId: providerKeyId(baseURL ?? "https://generativelanguage.googleapis.com", apiKey) };
}
