// How the client commands (fork, watch, ps, abort) reach NATS: the daemon's connection flags and
// environment variables, one connection attempt with a short timeout, and failures as exit code 3.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { ensureForkResources, type ForkResources, NatsForkSubagent } from "@forkd/client";
import { DAEMON_FLAGS, natsConnectionOptions, redactCredentials } from "@forkd/daemon";
import { HexSecretSchema, newSecret } from "@forkd/protocol/internal";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { NatsUnavailableError, UsageError } from "./errors.js";

/** The connection flags, spelled as `forkd daemon` spells them. */
export const NATS_FLAGS = {
  nats: DAEMON_FLAGS.nats,
  "nats-user": DAEMON_FLAGS["nats-user"],
  "nats-pass": DAEMON_FLAGS["nats-pass"],
  "nats-pass-file": DAEMON_FLAGS["nats-pass-file"],
  "nats-token": DAEMON_FLAGS["nats-token"],
  "nats-nkey": DAEMON_FLAGS["nats-nkey"],
  "nats-creds": DAEMON_FLAGS["nats-creds"],
  "nats-tls-ca": DAEMON_FLAGS["nats-tls-ca"],
  "nats-tls-cert": DAEMON_FLAGS["nats-tls-cert"],
  "nats-tls-key": DAEMON_FLAGS["nats-tls-key"],
  prefix: DAEMON_FLAGS.prefix,
} as const;

/** The parsed values of {@link NATS_FLAGS}. */
export interface NatsFlagValues {
  nats?: string[] | undefined;
  "nats-user"?: string | undefined;
  "nats-pass"?: string | undefined;
  "nats-pass-file"?: string | undefined;
  "nats-token"?: string | undefined;
  "nats-nkey"?: string | undefined;
  "nats-creds"?: string | undefined;
  "nats-tls-ca"?: string | undefined;
  "nats-tls-cert"?: string | undefined;
  "nats-tls-key"?: string | undefined;
  prefix?: string | undefined;
}

/** Where and how to connect, after flags, environment and defaults. */
export interface NatsTarget {
  servers: string[];
  prefix: string;
  nats: {
    servers: string[];
    user?: string;
    pass?: string;
    passFile?: string;
    token?: string;
    nkeySeedFile?: string;
    credsFile?: string;
    tls?: { caFile?: string; certFile?: string; keyFile?: string };
  };
}

/** The default server when neither `--nats` nor `FORKD_NATS_URL` / `NATS_URL` says. */
export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

const list = (value: string | undefined): string[] =>
  (value ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);

/** Flags win over the environment (`FORKD_NATS_URL`, `NATS_URL`, `NATS_USER`, …), which wins over defaults. */
export function natsTarget(flags: NatsFlagValues, env: NodeJS.ProcessEnv): NatsTarget {
  const fromFlags = (flags.nats ?? []).flatMap((value) => list(value));
  const fromEnv = list(env.FORKD_NATS_URL ?? env.NATS_URL);
  const servers = fromFlags.length > 0 ? fromFlags : fromEnv.length > 0 ? fromEnv : [DEFAULT_NATS_URL];
  const pick = (flag: string | undefined, envValue: string | undefined) =>
    flag !== undefined && flag !== ""
      ? flag
      : envValue !== undefined && envValue !== ""
        ? envValue
        : undefined;
  const nats: NatsTarget["nats"] = { servers };
  const set = <K extends "user" | "pass" | "passFile" | "token" | "nkeySeedFile" | "credsFile">(
    key: K,
    value?: string,
  ) => {
    if (value !== undefined) nats[key] = value;
  };
  set("user", pick(flags["nats-user"], env.NATS_USER));
  set("pass", pick(flags["nats-pass"], env.NATS_PASSWORD));
  set("passFile", pick(flags["nats-pass-file"], env.NATS_PASSWORD_FILE));
  set("token", pick(flags["nats-token"], env.NATS_TOKEN));
  set("nkeySeedFile", pick(flags["nats-nkey"], env.NATS_NKEY_SEED_FILE));
  set("credsFile", pick(flags["nats-creds"], env.NATS_CREDS));
  const tls: NonNullable<NatsTarget["nats"]["tls"]> = {};
  const ca = pick(flags["nats-tls-ca"], env.NATS_TLS_CA);
  const cert = pick(flags["nats-tls-cert"], env.NATS_TLS_CERT);
  const key = pick(flags["nats-tls-key"], env.NATS_TLS_KEY);
  if (ca !== undefined) tls.caFile = ca;
  if (cert !== undefined) tls.certFile = cert;
  if (key !== undefined) tls.keyFile = key;
  if (Object.keys(tls).length > 0) nats.tls = tls;
  const prefix = pick(flags.prefix, env.FORKD_PREFIX) ?? "agent";
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(prefix)) {
    throw new UsageError(`--prefix: ${JSON.stringify(prefix)} is not a valid subject prefix`);
  }
  return { servers, prefix, nats };
}

/**
 * Connects to `target` once (no retries: a CLI command should fail fast when NATS is down).
 * @throws {@link NatsUnavailableError} when no server answers or the credentials are refused.
 */
export async function connectTarget(
  target: NatsTarget,
  options: { name: string; timeoutMs?: number },
): Promise<NatsConnection> {
  let connectionOptions: ReturnType<typeof natsConnectionOptions>;
  try {
    connectionOptions = natsConnectionOptions({ nats: target.nats, daemonId: "cli" });
  } catch (error) {
    // An unreadable creds or NKey file.
    throw new UsageError(`cannot read the NATS credentials: ${(error as Error).message}`, { cause: error });
  }
  try {
    return await connect({
      ...connectionOptions,
      name: options.name,
      timeout: options.timeoutMs ?? 5000,
      maxReconnectAttempts: 10,
    });
  } catch (error) {
    throw natsUnavailable(target.servers, error);
  }
}

/** The error for a NATS that did not answer, with what to try. */
export function natsUnavailable(servers: readonly string[], cause: unknown): NatsUnavailableError {
  const reason = (cause as Error)?.message ?? String(cause);
  const redacted = servers.map(redactCredentials);
  return new NatsUnavailableError(
    redactCredentials(`cannot connect to NATS at ${redacted.join(", ")}: ${reason}`),
    {
      servers: redacted,
      cause,
      hint: "start one (`nats-server -js`), or point --nats / NATS_URL at yours",
    },
  );
}

/**
 * Opens forkd's JetStream resources (creating what is missing).
 * @throws {@link NatsUnavailableError} when JetStream is off or refuses.
 */
export async function openResources(nc: NatsConnection, prefix: string): Promise<ForkResources> {
  try {
    return await ensureForkResources(nc, { prefix });
  } catch (error) {
    throw jetStreamUnavailable(nc, error);
  }
}

/** True for what the NATS client throws when it cannot reach or talk to a server. */
export function isNatsConnectionError(error: unknown): boolean {
  const named = error as { name?: string; message?: string; code?: string } | undefined;
  if (named === undefined || named === null) return false;
  if (named.name === "ConnectionError" || named.name === "AuthorizationError") return true;
  return /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|connection refused/i.test(named.message ?? "");
}

/**
 * A {@link NatsForkSubagent} on `nc` (its resources created where missing).
 * @throws {@link NatsUnavailableError} when JetStream is off or refuses.
 */
export async function openSubagent(
  nc: NatsConnection,
  prefix: string,
  ownerKey: string,
): Promise<NatsForkSubagent> {
  try {
    return await NatsForkSubagent.create(nc, { prefix, ownerKey });
  } catch (error) {
    throw jetStreamUnavailable(nc, error);
  }
}

/**
 * The user's owner key: `FORKD_OWNER_KEY`, else the file `$XDG_CONFIG_HOME/forkd/owner-key`
 * (`~/.config/forkd/owner-key`), created with mode 0600 on first use. Every `forkd fork` and
 * `forkd abort` of one user shares it, so `forkd abort` can stop that user's forks and nobody else's.
 */
export async function loadOwnerKey(env: Readonly<Record<string, string | undefined>>): Promise<string> {
  const fromEnv = env.FORKD_OWNER_KEY;
  if (fromEnv !== undefined && fromEnv !== "") {
    if (!HexSecretSchema.safeParse(fromEnv).success)
      throw new UsageError(
        "FORKD_OWNER_KEY must be 64 lowercase hex characters (e.g. `openssl rand -hex 32`)",
      );
    return fromEnv;
  }
  const configHome = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config");
  const file = join(configHome, "forkd", "owner-key");
  try {
    const stored = (await readFile(file, "utf8")).trim();
    if (HexSecretSchema.safeParse(stored).success) return stored;
    throw new UsageError(`${file} does not hold an owner key (64 lowercase hex characters)`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const key = newSecret();
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  try {
    await writeFile(file, `${key}\n`, { mode: 0o600, flag: "wx" });
    return key;
  } catch (error) {
    // Another forkd created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return (await readFile(file, "utf8")).trim();
    throw error;
  }
}

function jetStreamUnavailable(nc: NatsConnection, error: unknown): NatsUnavailableError {
  return new NatsUnavailableError((error as Error).message ?? String(error), {
    servers: nc.getServer() ? [nc.getServer()] : [],
    cause: error,
    hint: "forkd needs JetStream: start nats-server with -js (or `jetstream: enabled` for the account)",
  });
}
