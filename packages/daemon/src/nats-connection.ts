// Connects to NATS with the credentials the configuration names.
import { readFileSync } from "node:fs";
import { DAEMON_INBOX_PREFIX } from "@forkd/protocol";
import {
  connect,
  credsAuthenticator,
  type NatsConnection,
  type NodeConnectionOptions,
  nkeyAuthenticator,
} from "@nats-io/transport-node";
import type { DaemonConfig } from "./config.js";
import { DaemonError } from "./errors.js";
import { redactCredentials } from "./redact.js";

/** Connection options for `config.nats`: user/password, token, NKey seed file or creds file, TLS. */
export function natsConnectionOptions(
  config: Pick<DaemonConfig, "nats" | "daemonId">,
): NodeConnectionOptions {
  const nats = config.nats;
  const options: NodeConnectionOptions = {
    servers: nats.servers,
    name: `forkd-daemon-${config.daemonId}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    // The client otherwise builds an Error (a stack trace) for every request, to enrich async
    // failures: ~0.4 ms of CPU per fork on the hot path, for traces the daemon logs by run anyway.
    noAsyncTraces: true,
    // Specs and the owner's answers arrive on inboxes only daemons may read (see DAEMON_INBOX_PREFIX).
    inboxPrefix: DAEMON_INBOX_PREFIX,
  };
  if (nats.user !== undefined) options.user = nats.user;
  if (nats.pass !== undefined) options.pass = nats.pass;
  if (nats.passFile !== undefined) options.pass = readFileSync(nats.passFile, "utf8").split(/\r?\n/, 1)[0]!;
  if (nats.token !== undefined) options.token = nats.token;
  if (nats.credsFile !== undefined) options.authenticator = credsAuthenticator(readFileSync(nats.credsFile));
  else if (nats.nkeySeedFile !== undefined) {
    options.authenticator = nkeyAuthenticator(
      new TextEncoder().encode(readFileSync(nats.nkeySeedFile, "utf8").trim()),
    );
  }
  if (nats.tls) {
    const tls: NonNullable<NodeConnectionOptions["tls"]> = {};
    if (nats.tls.caFile) tls.caFile = nats.tls.caFile;
    if (nats.tls.certFile) tls.certFile = nats.tls.certFile;
    if (nats.tls.keyFile) tls.keyFile = nats.tls.keyFile;
    options.tls = tls;
  }
  return options;
}

/**
 * Connects with {@link natsConnectionOptions}. A failure names the servers, never their credentials.
 * @throws a `nats_unavailable` DaemonError
 */
export async function connectNats(config: Pick<DaemonConfig, "nats" | "daemonId">): Promise<NatsConnection> {
  try {
    return await connect(natsConnectionOptions(config));
  } catch (error) {
    const reason = (error as Error)?.message ?? String(error);
    throw new DaemonError(
      "nats_unavailable",
      redactCredentials(`cannot connect to NATS at ${config.nats.servers.join(", ")}: ${reason}`),
      { retryable: true, cause: error },
    );
  }
}
