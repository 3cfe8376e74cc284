// Finds a NATS server with JetStream for the demo: the one the user names (--nats, NATS_URL), else
// one on localhost:4222, else a nats-server it starts in a temp dir (found, or installed once by
// @forkd/local-nats's locateNatsServer; else Docker through testcontainers), else one error naming
// every route tried.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { NatsUnavailableError } from "../errors.js";
import { natsUnavailable } from "../nats.js";

/** The server the demo uses. */
export interface DemoNats {
  url: string;
  /** How it was found, for the user. */
  how: string;
  /** True when the demo started it (and so owns everything on it). */
  own: boolean;
  /** Where it listens for WebSocket clients (the web view), when the demo started it with `websocket`. */
  websocketUrl?: string | undefined;
  /** Stops the server when the demo started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/** Options of {@link findNats}. */
export interface FindNatsOptions {
  /** `--nats`, else `NATS_URL`. */
  url: string | undefined;
  /** `--start-nats`: skip the user's and the local server. */
  forceStart: boolean;
  signal: AbortSignal;
  /** Notes on what was tried and skipped. */
  note: (line: string) => void;
  /** Start the server with WebSocket on a free loopback port too (for `--web`). */
  websocket?: boolean;
}

/** The port a local NATS server listens on unless told otherwise. */
export const LOCAL_NATS_URL = "nats://127.0.0.1:4222";

// Connects, checks that JetStream answers, closes. Resolves with why not, or undefined when usable.
async function probe(
  url: string,
  timeoutMs: number,
): Promise<{ error: unknown; jetstream: boolean } | undefined> {
  let nc: Awaited<ReturnType<typeof connect>>;
  try {
    nc = await connect({ servers: url, timeout: timeoutMs, maxReconnectAttempts: 0 });
  } catch (error) {
    return { error, jetstream: false };
  }
  try {
    await (await jetstreamManager(nc, { timeout: timeoutMs })).getAccountInfo();
    return undefined;
  } catch (error) {
    return { error, jetstream: true };
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** Finds or starts a NATS server. @throws {@link NatsUnavailableError} when there is no way to get one. */
export async function findNats(options: FindNatsOptions): Promise<DemoNats> {
  const nothingToStop = async () => {};
  if (!options.forceStart && options.url !== undefined) {
    const problem = await probe(options.url, 3000);
    if (problem === undefined)
      return { url: options.url, how: "the server you named", own: false, stop: nothingToStop };
    if (problem.jetstream) {
      throw new NatsUnavailableError(
        `NATS at ${options.url} has no JetStream: ${(problem.error as Error).message}`,
        {
          servers: [options.url],
          cause: problem.error,
          hint: "enable JetStream (nats-server -js), or run the demo with --start-nats",
        },
      );
    }
    throw natsUnavailable([options.url], problem.error);
  }
  if (!options.forceStart) {
    const problem = await probe(LOCAL_NATS_URL, 500);
    if (problem === undefined) {
      return {
        url: LOCAL_NATS_URL,
        how: "the server already running on localhost:4222",
        own: false,
        stop: nothingToStop,
      };
    }
    if (problem.jetstream)
      options.note("localhost:4222 answers but has no JetStream; starting a nats-server of my own");
  }
  const { startNatsServer, INSTALL_HINT, locateNatsServer } = await import("@forkd/local-nats");
  let location: Awaited<ReturnType<typeof locateNatsServer>>;
  try {
    // Finds nats-server, or installs it once (apt-get or the verified release archive), saying so.
    location = await locateNatsServer({ log: options.note });
  } catch (error) {
    // The CLI prints one line: every route tried and why it failed, then how to install one.
    const tried = options.forceStart ? [] : ["NATS_URL: not set, and nothing answers on localhost:4222"];
    const routes = (error as { routes?: readonly { route: string; outcome: string }[] }).routes;
    const why =
      routes === undefined
        ? (error as Error).message
        : [...tried, ...routes.map((r) => `${r.route}: ${r.outcome}`)].join("; ");
    throw new NatsUnavailableError(`no NATS server for the demo: ${why}`, {
      servers: [],
      cause: error,
      hint: INSTALL_HINT,
    });
  }
  try {
    const server = await startNatsServer({
      name: "forkd-demo",
      signal: options.signal,
      websocket: options.websocket === true,
      ...(location.kind === "binary" ? { binary: location.path, mode: "binary" } : { mode: "container" }),
    });
    const how =
      location.kind === "binary"
        ? `nats-server ${location.version} (${location.route}: ${location.path}) started by the demo in a temp dir (${server.storeDir})`
        : "nats-server started by the demo in a container (testcontainers)";
    return { url: server.url, how, own: true, websocketUrl: server.websocketUrl, stop: () => server.stop() };
  } catch (error) {
    if (options.signal.aborted) throw error;
    const where = location.kind === "binary" ? location.path : "a container";
    throw new NatsUnavailableError(`could not start nats-server (${where}): ${(error as Error).message}`, {
      servers: [],
      cause: error,
      hint: INSTALL_HINT,
    });
  }
}
