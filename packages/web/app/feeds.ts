// The page's NATS side, as an observer: every run's events (one ordered consumer on the events stream,
// from its start), the runs and daemons buckets (KV watches), one run's log from seq 1 then live, and
// whether these credentials may abort (a probe the server answers with a permissions error if not).
import { DeliverPolicy, type JetStreamClient, jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { errors, type NatsConnection, wsconnect } from "@nats-io/nats-core";
import type { WebPageConfig } from "../src/config.js";
import type { PageModel } from "./model.js";
import {
  type DaemonInfo,
  decodeEventLenient,
  type ForkEvent,
  forkSubjects,
  PROTOCOL_VERSION,
  type RunState,
} from "./shared.js";

/** One line of a run's log: a known event, or one of a newer protocol shown by its envelope. */
export type LoggedEvent =
  | { kind: "event"; event: ForkEvent }
  | { kind: "unknown"; type: string; seq: number; ts: number; attempt: number; raw: Record<string, unknown> };

/** The run id the permission probe aborts: no run has it, so the abort stops nothing. */
const PROBE_RUN_ID = "forkd-web-permission-probe";
const RETRY_MS = 2000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A connection to NATS with forkd's names for one prefix. */
export class Feeds {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly subjects: ReturnType<typeof forkSubjects>;
  readonly #config: WebPageConfig;

  private constructor(nc: NatsConnection, config: WebPageConfig) {
    this.nc = nc;
    this.js = jetstream(nc);
    this.subjects = forkSubjects(config.prefix);
    this.#config = config;
  }

  /** Connects over WebSocket with the config's credentials; reconnects for ever. */
  static async connect(config: WebPageConfig): Promise<Feeds> {
    const nc = await wsconnect({
      servers: config.servers,
      name: "forkd-web",
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1000,
      ...(config.user === undefined ? {} : { user: config.user }),
      ...(config.pass === undefined ? {} : { pass: config.pass }),
      ...(config.token === undefined ? {} : { token: config.token }),
    });
    return new Feeds(nc, config);
  }

  /**
   * Follows every run's events into `model` until the connection closes. While forkd's events stream
   * does not exist yet (no daemon or parent has run), waits for it, saying so through `status`.
   */
  async followEvents(model: PageModel, changed: () => void, status: (line: string) => void): Promise<void> {
    for (;;) {
      if (this.nc.isClosed()) return;
      try {
        const consumer = await this.js.consumers.get(this.subjects.streams.events, {
          filter_subjects: this.subjects.allEvents,
          deliver_policy: DeliverPolicy.All,
        });
        const messages = await consumer.consume({ max_messages: 1024 });
        status("");
        for await (const message of messages) {
          const decoded = decodeOrSkip(message.data);
          if (decoded?.kind === "event" && model.applyEvent(decoded.event)) changed();
        }
        // The consumer ended without the connection closing (the server lost it): follow again.
        // The replay is harmless: the tracker ignores every seq it has applied.
      } catch (error) {
        status(
          `waiting for forkd's event stream ${this.subjects.streams.events}: ${(error as Error).message}`,
        );
        await sleep(RETRY_MS);
      }
    }
  }

  /** Follows the runs bucket (parent, group, label of every run) into `model`. */
  async followRuns(model: PageModel, changed: () => void): Promise<void> {
    await this.#watch(this.subjects.buckets.runs, (key, value) => {
      if (value === undefined) return;
      const state = value as RunState;
      if (typeof state.run_id === "string" && state.run_id === key) {
        model.applyRunState(state);
        changed();
      }
    });
  }

  /** Follows the daemons bucket (slots, load, heartbeat of every daemon) into `model`. */
  async followDaemons(model: PageModel, changed: () => void): Promise<void> {
    await this.#watch(this.subjects.buckets.daemons, (key, value) => {
      if (key.includes(".")) return; // the retention lease, not a daemon
      model.applyDaemon(key, value as DaemonInfo | undefined);
      changed();
    });
  }

  async #watch(bucket: string, apply: (key: string, value: unknown) => void): Promise<void> {
    for (;;) {
      if (this.nc.isClosed()) return;
      try {
        const kv = await new Kvm(this.js).open(bucket);
        const entries = await kv.watch({ key: ">" });
        for await (const entry of entries) {
          if (entry.operation !== "PUT") {
            apply(entry.key, undefined);
            continue;
          }
          try {
            apply(entry.key, JSON.parse(decoder.decode(entry.value)));
          } catch {
            // a value that is not JSON is not forkd's: skipped
          }
        }
        // The watch ended without the connection closing: watch again (entries apply idempotently).
      } catch {
        await sleep(RETRY_MS);
      }
    }
  }

  /**
   * One run's log from seq 1, then live, each event handed to `each` once; ends when `signal` aborts.
   * A consumer that cannot be made (the server stalled, restarting, electing a leader) or that ends is
   * made again every {@link RETRY_MS}, from seq 1 with what was shown skipped; `problem` says why the
   * log is not live meanwhile, and `undefined` once it is again.
   */
  async followRun(
    runId: string,
    each: (logged: LoggedEvent) => void,
    signal: AbortSignal,
    problem: (text: string | undefined) => void,
  ): Promise<void> {
    let lastSeq = 0;
    const show = (data: Uint8Array) => {
      const decoded = decodeOrSkip(data);
      if (decoded === undefined) return;
      const seq = decoded.kind === "event" ? decoded.event.seq : decoded.envelope.seq;
      if (seq <= lastSeq) return; // a republished event, or one shown before a retry
      lastSeq = seq;
      each(
        decoded.kind === "event"
          ? decoded
          : {
              kind: "unknown",
              type: decoded.type,
              seq,
              ts: decoded.envelope.ts,
              attempt: decoded.envelope.attempt,
              raw: decoded.raw,
            },
      );
    };
    // Failed attempts since the log was last live: the count tells a reader the page keeps trying.
    let failed = 0;
    const following = () => {
      failed = 0;
      problem(undefined);
    };
    while (!signal.aborted) {
      try {
        await this.#followRunOnce(runId, show, signal, following);
        if (signal.aborted) return;
        problem("the log's consumer ended; following again");
      } catch (error) {
        if (signal.aborted) return;
        failed++;
        problem(`log unavailable (attempt ${failed}): ${(error as Error).message}; retrying`);
      }
      await sleep(RETRY_MS, signal);
    }
  }

  async #followRunOnce(
    runId: string,
    show: (data: Uint8Array) => void,
    signal: AbortSignal,
    following: () => void,
  ): Promise<void> {
    const consumer = await this.js.consumers.get(this.subjects.streams.events, {
      filter_subjects: this.subjects.events(runId),
      deliver_policy: DeliverPolicy.All,
    });
    const messages = await consumer.consume({ max_messages: 1024 });
    const stop = () => messages.stop();
    signal.addEventListener("abort", stop, { once: true });
    if (signal.aborted) messages.stop();
    following();
    try {
      for await (const message of messages) show(message.data);
    } finally {
      signal.removeEventListener("abort", stop);
    }
  }

  /**
   * Whether these credentials may publish aborts: an abort of a run id no run has, which the server
   * refuses with a permissions error when they may not (the observer's case). Daemons ignore it.
   */
  async mayAbort(): Promise<boolean> {
    try {
      await this.nc.request(
        this.subjects.abort(PROBE_RUN_ID),
        this.#abortBytes(PROBE_RUN_ID, "permission probe"),
        {
          timeout: 1500,
        },
      );
      return true;
    } catch (error) {
      // The client wraps the server's refusal in a RequestError whose cause is the violation.
      const refusal = error instanceof errors.RequestError ? error.cause : error;
      return !(refusal instanceof errors.PermissionViolationError);
    }
  }

  /**
   * Aborts `runId` (`mode` "abort": cut now) or stops it gracefully (`mode` "stop": the current model
   * turn or tool finishes, nothing new starts, the run ends `completed`), through the fast path (the
   * daemon running it acts within milliseconds), with the owner's proof of that mode when the page
   * was given the owner key. Daemons refuse either without it.
   */
  async control(runId: string, mode: "abort" | "stop", reason: string): Promise<void> {
    const proof =
      this.#config.ownerKey === undefined
        ? undefined
        : await hmacHex(
            await hmacHex(this.#config.ownerKey, `forkd-owner-token\n${runId}`),
            `${mode}\n${runId}`,
          );
    this.nc.publish(this.subjects.abort(runId), this.#abortBytes(runId, reason, proof, mode));
    await this.nc.flush();
  }

  #abortBytes(runId: string, reason: string, proof?: string, mode: "abort" | "stop" = "abort"): Uint8Array {
    return encoder.encode(
      JSON.stringify({
        v: PROTOCOL_VERSION,
        run_id: runId,
        reason,
        requested_at: Date.now(),
        by: "forkd web",
        ...(proof === undefined ? {} : { proof }),
        ...(mode === "stop" ? { mode } : {}),
      }),
    );
  }
}

/** HMAC-SHA256 of `message` keyed with the UTF-8 bytes of `key`, as lowercase hex (as node:crypto's). */
async function hmacHex(key: string, message: string): Promise<string> {
  const cryptoKey = await crypto.subtle.importKey(
    "raw",
    encoder.encode(key),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, encoder.encode(message)));
  return [...signature].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The event in `data`, or undefined for bytes that are no event of this protocol (nothing to show). */
function decodeOrSkip(data: Uint8Array): ReturnType<typeof decodeEventLenient> | undefined {
  try {
    return decodeEventLenient(data);
  } catch {
    return undefined;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
