// Daemon configuration: defaults, then a JSON file, then environment, then flags; validated once
// into a "compiled" config that the rest of the daemon trusts.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { ForkdError, MAX_PREFIX_BYTES } from "@forkd/protocol";
import { z } from "zod";
import { LOG_FORMATS, LOG_LEVELS } from "./logger.js";

const positiveInt = z.coerce.number().int().positive();

/** The validated daemon configuration. */
export const DaemonConfigSchema = z.object({
  /** Unique id in the cluster; appears in events and the daemons bucket. */
  daemonId: z.string().regex(/^[A-Za-z0-9_=-]{1,128}$/),
  nats: z.object({
    servers: z.array(z.string().min(1)).min(1),
    user: z.string().optional(),
    pass: z.string().optional(),
    /** File holding the password (its first line), so that it is neither in argv nor in the environment. */
    passFile: z.string().optional(),
    token: z.string().optional(),
    /** File holding an NKey seed (`SU…`). */
    nkeySeedFile: z.string().optional(),
    /** A `.creds` file (JWT + seed). */
    credsFile: z.string().optional(),
    tls: z
      .object({
        caFile: z.string().optional(),
        certFile: z.string().optional(),
        keyFile: z.string().optional(),
      })
      .optional(),
  }),
  /** Subject prefix. */
  prefix: z.string().default("agent"),
  replicas: z.union([z.literal("auto"), positiveInt]).default("auto"),
  /** @unit ms */
  ackWaitMs: positiveInt.default(30_000),
  maxDeliver: positiveInt.default(5),
  /** Runs at once. */
  concurrency: positiveInt.default(4),
  /**
   * A spec taken fresh from the queue sends its first model request while its claim is in flight,
   * instead of after the claim is stored: one round trip sooner (bench #2). Its events and tools still
   * wait for the claim; a claim that is refused (the run id has an entry already: another owner, an
   * abort) aborts that request and hands the spec back. `false`: nothing reaches the provider before
   * the claim is stored (docs/architecture.md, "A first request ahead of its claim").
   */
  callAheadOfClaim: z
    .preprocess((value) => (value === "true" ? true : value === "false" ? false : value), z.boolean())
    .default(true),
  /**
   * Model calls at once per provider key, shared by every daemon of the account that sets it (set the
   * same value on all of them); absent: no shared limit.
   */
  callLimitPerKey: positiveInt.optional(),
  /**
   * Model calls at once per model (each model its own N), shared like `callLimitPerKey`; absent: none.
   * `callLimitModels` gives one model its own N.
   */
  callLimitPerModel: positiveInt.optional(),
  /** Model calls at once of one model, by name (config file only): overrides `callLimitPerModel`. */
  callLimitModels: z.record(z.string().min(1), positiveInt).default({}),
  /** Model calls at once of the whole tenant (`tenant`), shared like `callLimitPerKey`; absent: none. */
  callLimitPerTenant: positiveInt.optional(),
  /**
   * The tenant whose calls `callLimitPerTenant` counts. A NATS account is already a tenant of its own
   * (its own buckets): this names tenants that share one account. Set by the operator, never by a spec.
   */
  tenant: z.string().min(1).max(256).default("default"),
  /**
   * How long a slot of a shared call limit stays taken after its daemon stops renewing it (a daemon
   * killed while calling): its lease. Renewed every third of it while the call runs. At most 30 s: the
   * daemons bucket forgets an entry 30 s after its last write, and a renewal must come before that.
   * @unit ms
   */
  callLimitLeaseMs: z.coerce.number().int().min(1_000).max(30_000).default(30_000),
  /** Root directory tools work in; Write and Edit are confined to it. */
  workspace: z.string().min(1),
  /** Models a spec may use; empty allows any. */
  allowedModels: z.array(z.string()).default([]),
  /** Model for a spec that has no cache-safe params and no model override. */
  defaultModel: z.string().default("claude-sonnet-4-6"),
  /** max_tokens when neither the parent request nor the spec gives one. */
  defaultMaxTokens: positiveInt.default(8192),
  /**
   * What no spec can exceed, whatever it asks: a run longer than `maxRunMs` (counted from its first
   * claim, across attempts, so a trickling model stream or a silent tool host ends too) fails with
   * `timeout`; `max_turns` and `max_tokens` are lowered to these.
   */
  /** The largest stored prefix this daemon reads; a reference announcing more fails its run before a byte is read. @unit bytes */
  maxPrefixBytes: positiveInt.default(MAX_PREFIX_BYTES),
  ceilings: z
    .object({
      /** @unit ms */
      maxRunMs: positiveInt.default(3_600_000),
      maxTurns: positiveInt.default(200),
      maxOutputTokens: positiveInt.default(128_000),
    })
    .default({ maxRunMs: 3_600_000, maxTurns: 200, maxOutputTokens: 128_000 }),
  tools: z
    .object({
      bash: z.enum(["read-only", "full", "off"]).default("read-only"),
      /**
       * Where Bash runs: `bwrap` (bubblewrap: no network, own PID namespace and /proc, only the
       * workspace visible, no daemon secrets) or `off`. With Bash on and `bwrap`, a daemon that
       * cannot run bubblewrap refuses to start.
       */
      sandbox: z.enum(["bwrap", "off"]).default("bwrap"),
      /** @unit ms */
      bashTimeoutMs: positiveInt.default(120_000),
      /** @unit bytes */
      outputCapBytes: positiveInt.default(30_000),
    })
    .default({ bash: "read-only", sandbox: "bwrap", bashTimeoutMs: 120_000, outputCapBytes: 30_000 }),
  llm: z
    .object({
      /** Defaults to the SDK's `ANTHROPIC_BASE_URL`. */
      baseURL: z.string().optional(),
      /** Defaults to the SDK's `ANTHROPIC_API_KEY`. */
      apiKey: z.string().optional(),
      /** Base URL of the OpenAI APIs (with `/v1`). Defaults to the SDK's `OPENAI_BASE_URL`. */
      openaiBaseURL: z.string().optional(),
      /** Defaults to `OPENAI_API_KEY`; without either, specs that name an OpenAI API fail `provider_unavailable`. */
      openaiApiKey: z.string().optional(),
      /** Base URL of the Gemini API (without `/v1beta`). Defaults to `GOOGLE_GEMINI_BASE_URL`, else Google's. */
      geminiBaseURL: z.string().optional(),
      /** Defaults to `GEMINI_API_KEY`; without either, specs that name the Gemini API fail `provider_unavailable`. */
      geminiApiKey: z.string().optional(),
      maxRetries: z.coerce.number().int().nonnegative().default(4),
      /** @unit ms */
      timeoutMs: positiveInt.default(600_000),
    })
    .default({ maxRetries: 4, timeoutMs: 600_000 }),
  /** How long SIGTERM waits for in-flight runs before handing them to other daemons. @unit ms */
  drainGraceMs: z.coerce.number().int().nonnegative().default(30_000),
  /** Heartbeat period of the daemon entry and of each run. @unit ms */
  heartbeatMs: positiveInt.default(5_000),
  /** Period of the daemon's presence beats (core NATS), which the other daemons follow. @unit ms */
  presenceMs: positiveInt.default(250),
  /**
   * A daemon silent this long is gone: its runs are handed back to the queue at once
   * (docs/failure-behaviour.md). 0 leaves them to JetStream's redelivery after `ackWaitMs`. @unit ms
   */
  failoverAfterMs: z.coerce.number().int().nonnegative().default(1_000),
  /**
   * A finished run's registry entry and events are removed this long after it ended; the daemon that
   * holds the retention lease sweeps (docs/operations.md, "Retention"). @unit ms
   */
  retentionMs: positiveInt.default(6 * 60 * 60 * 1000),
  /** A stored prefix no queued or running run refers to is removed this long after its last use. @unit ms */
  prefixRetentionMs: positiveInt.default(60 * 60 * 1000),
  /** Prometheus `/metrics` port; 0 picks a free one; absent disables it. */
  metricsPort: z.coerce.number().int().nonnegative().optional(),
  metricsHost: z.string().default("127.0.0.1"),
  logLevel: z.enum(LOG_LEVELS).default("info"),
  /** `pretty` on a terminal, `json` otherwise, unless set. */
  logFormat: z.enum(LOG_FORMATS).default("auto"),
});

export type DaemonConfig = z.infer<typeof DaemonConfigSchema>;
export type DaemonConfigInput = z.input<typeof DaemonConfigSchema>;

/** A configuration problem, reported as one clear line. */
export class DaemonConfigError extends ForkdError<"invalid_config"> {
  override readonly name = "DaemonConfigError";
  readonly code = "invalid_config" as const;
  readonly retryable = false;
}

/** Flags understood by `forkd daemon` (and `node packages/daemon/dist/main.js`). */
export const DAEMON_FLAGS = {
  config: { type: "string" },
  "call-limit-per-key": { type: "string" },
  "call-limit-per-model": { type: "string" },
  "call-limit-per-tenant": { type: "string" },
  "call-limit-lease": { type: "string" },
  tenant: { type: "string" },
  nats: { type: "string", multiple: true },
  "nats-user": { type: "string" },
  "nats-pass": { type: "string" },
  "nats-pass-file": { type: "string" },
  "nats-token": { type: "string" },
  "nats-nkey": { type: "string" },
  "nats-creds": { type: "string" },
  "nats-tls-ca": { type: "string" },
  "nats-tls-cert": { type: "string" },
  "nats-tls-key": { type: "string" },
  id: { type: "string" },
  prefix: { type: "string" },
  replicas: { type: "string" },
  "ack-wait": { type: "string" },
  "max-deliver": { type: "string" },
  concurrency: { type: "string" },
  workspace: { type: "string" },
  "allowed-models": { type: "string" },
  "default-model": { type: "string" },
  "max-prefix-bytes": { type: "string" },
  "max-run-time": { type: "string" },
  "max-turns": { type: "string" },
  "max-output-tokens": { type: "string" },
  bash: { type: "string" },
  "bash-timeout": { type: "string" },
  "bash-sandbox": { type: "string" },
  "drain-grace": { type: "string" },
  heartbeat: { type: "string" },
  presence: { type: "string" },
  "failover-after": { type: "string" },
  retention: { type: "string" },
  "prefix-retention": { type: "string" },
  "metrics-port": { type: "string" },
  "metrics-host": { type: "string" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  "llm-base-url": { type: "string" },
  "openai-base-url": { type: "string" },
  "gemini-base-url": { type: "string" },
  "llm-max-retries": { type: "string" },
  "call-ahead-of-claim": { type: "string" },
} as const;

type Json = Record<string, unknown>;

function setPath(target: Json, path: string, value: unknown): void {
  if (value === undefined || value === "") return;
  const keys = path.split(".");
  let node = target;
  for (const key of keys.slice(0, -1)) {
    node[key] = (node[key] as Json | undefined) ?? {};
    node = node[key] as Json;
  }
  node[keys.at(-1)!] = value;
}

const list = (value: string | undefined) =>
  value === undefined
    ? undefined
    : value
        .split(",")
        .map((item) => item.trim())
        .filter(Boolean);

/**
 * Builds the configuration from flags (`argv`), environment and an optional JSON file
 * (`--config` or `FORKD_CONFIG`), flags winning over environment over file over defaults.
 */
export function loadDaemonConfig(
  options: { argv?: string[]; env?: NodeJS.ProcessEnv; overrides?: Json } = {},
): DaemonConfig {
  const env = options.env ?? process.env;
  let flags: ReturnType<typeof parseArgs<{ options: typeof DAEMON_FLAGS; strict: true }>>["values"];
  try {
    flags = parseArgs({
      args: options.argv ?? [],
      options: DAEMON_FLAGS,
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new DaemonConfigError((error as Error).message);
  }
  const raw: Json = {};
  const file = flags.config ?? env.FORKD_CONFIG;
  if (file) {
    try {
      Object.assign(raw, JSON.parse(readFileSync(file, "utf8")) as Json);
    } catch (error) {
      throw new DaemonConfigError(`cannot read config file ${file}: ${(error as Error).message}`);
    }
  }
  const layer = (path: string, envValue: unknown, flagValue: unknown) => {
    setPath(raw, path, envValue);
    setPath(raw, path, flagValue);
  };
  layer(
    "nats.servers",
    list(env.FORKD_NATS_URL ?? env.NATS_URL),
    flags.nats?.flatMap((s) => list(s) ?? []),
  );
  layer("nats.user", env.NATS_USER, flags["nats-user"]);
  layer("nats.pass", env.NATS_PASSWORD, flags["nats-pass"]);
  layer("nats.passFile", env.NATS_PASSWORD_FILE, flags["nats-pass-file"]);
  layer("nats.token", env.NATS_TOKEN, flags["nats-token"]);
  layer("nats.nkeySeedFile", env.NATS_NKEY_SEED_FILE, flags["nats-nkey"]);
  layer("nats.credsFile", env.NATS_CREDS, flags["nats-creds"]);
  layer("nats.tls.caFile", env.NATS_TLS_CA, flags["nats-tls-ca"]);
  layer("nats.tls.certFile", env.NATS_TLS_CERT, flags["nats-tls-cert"]);
  layer("nats.tls.keyFile", env.NATS_TLS_KEY, flags["nats-tls-key"]);
  layer("daemonId", env.FORKD_DAEMON_ID, flags.id);
  layer("prefix", env.FORKD_PREFIX, flags.prefix);
  layer("replicas", env.FORKD_REPLICAS, flags.replicas);
  layer("ackWaitMs", env.FORKD_ACK_WAIT_MS, flags["ack-wait"]);
  layer("maxDeliver", env.FORKD_MAX_DELIVER, flags["max-deliver"]);
  layer("concurrency", env.FORKD_CONCURRENCY, flags.concurrency);
  layer("callAheadOfClaim", env.FORKD_CALL_AHEAD_OF_CLAIM, flags["call-ahead-of-claim"]);
  layer("callLimitPerKey", env.FORKD_CALL_LIMIT_PER_KEY, flags["call-limit-per-key"]);
  layer("callLimitPerModel", env.FORKD_CALL_LIMIT_PER_MODEL, flags["call-limit-per-model"]);
  layer("callLimitPerTenant", env.FORKD_CALL_LIMIT_PER_TENANT, flags["call-limit-per-tenant"]);
  layer("callLimitLeaseMs", env.FORKD_CALL_LIMIT_LEASE_MS, flags["call-limit-lease"]);
  layer("tenant", env.FORKD_TENANT, flags.tenant);
  layer("workspace", env.FORKD_WORKSPACE, flags.workspace);
  layer("allowedModels", list(env.FORKD_ALLOWED_MODELS), list(flags["allowed-models"]));
  layer("defaultModel", env.FORKD_DEFAULT_MODEL, flags["default-model"]);
  layer("maxPrefixBytes", env.FORKD_MAX_PREFIX_BYTES, flags["max-prefix-bytes"]);
  layer("ceilings.maxRunMs", env.FORKD_MAX_RUN_MS, flags["max-run-time"]);
  layer("ceilings.maxTurns", env.FORKD_MAX_TURNS, flags["max-turns"]);
  layer("ceilings.maxOutputTokens", env.FORKD_MAX_OUTPUT_TOKENS, flags["max-output-tokens"]);
  layer("tools.bash", env.FORKD_BASH_POLICY, flags.bash);
  layer("tools.sandbox", env.FORKD_BASH_SANDBOX, flags["bash-sandbox"]);
  layer("tools.bashTimeoutMs", env.FORKD_BASH_TIMEOUT_MS, flags["bash-timeout"]);
  layer("drainGraceMs", env.FORKD_DRAIN_GRACE_MS, flags["drain-grace"]);
  layer("heartbeatMs", env.FORKD_HEARTBEAT_MS, flags.heartbeat);
  layer("presenceMs", env.FORKD_PRESENCE_MS, flags.presence);
  layer("failoverAfterMs", env.FORKD_FAILOVER_AFTER_MS, flags["failover-after"]);
  layer("retentionMs", env.FORKD_RETENTION_MS, flags.retention);
  layer("prefixRetentionMs", env.FORKD_PREFIX_RETENTION_MS, flags["prefix-retention"]);
  layer("metricsPort", env.FORKD_METRICS_PORT, flags["metrics-port"]);
  layer("metricsHost", env.FORKD_METRICS_HOST, flags["metrics-host"]);
  layer("logLevel", env.FORKD_LOG_LEVEL, flags["log-level"]);
  layer("logFormat", env.FORKD_LOG_FORMAT, flags["log-format"]);
  layer("llm.baseURL", undefined, flags["llm-base-url"]);
  layer("llm.openaiBaseURL", undefined, flags["openai-base-url"]);
  layer("llm.geminiBaseURL", undefined, flags["gemini-base-url"]);
  layer("llm.maxRetries", env.FORKD_LLM_MAX_RETRIES, flags["llm-max-retries"]);
  for (const [key, value] of Object.entries(options.overrides ?? {})) raw[key] = value;
  raw.nats ??= {};
  (raw.nats as Json).servers ??= ["nats://127.0.0.1:4222"];
  raw.workspace = resolve(String(raw.workspace ?? process.cwd()));
  raw.daemonId ??= `${hostname()
    .replace(/[^A-Za-z0-9_-]/g, "-")
    .slice(0, 64)}-${process.pid}`;
  if (typeof raw.replicas === "string" && raw.replicas !== "auto") raw.replicas = Number(raw.replicas);
  const parsed = DaemonConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new DaemonConfigError(
      `invalid daemon configuration at ${issue.path.join(".") || "(root)"}: ${issue.message}`,
    );
  }
  return parsed.data;
}
