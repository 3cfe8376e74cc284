// The simulator in a process of its own, for the benchmarks that measure forkd's CPU and latency
// (#2, #3, #6, #8): the provider is remote in the real world, and its per-request work grows with
// the prefix (~1.6 ms more per request at 48k than at 4k), which in the benchmark's own process
// would be counted against forkd and the in-process baseline alike.
import { type ChildProcess, fork, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { LatencyOptions } from "@forkd/sim";
import { now } from "./stats.js";

/** A finished request, as the benchmarks need it (the body reduced to its bench tag). */
export interface SeenRequest {
  seq: number;
  path: string;
  /** The `[bench:<tag>]` of its directive, if any. */
  tag: string | undefined;
  /** Request headers received. @unit ms since epoch, on this process's clock */
  receivedAt: number;
  /** Body checked, cache decided; null if it never got that far. @unit ms since epoch, on this process's clock */
  acceptedAt: number | null;
}

/** A request accepted, or its first response byte sent. */
export interface SeenMoment {
  seq: number;
  /** @unit ms since epoch, on this process's clock */
  at: number;
}

/** The simulator events a {@link SimProcess} forwards. */
export interface SimProcessEvents {
  request: SeenRequest;
  accepted: SeenMoment;
  firstByte: SeenMoment;
}

/** Configuration handed to sim-host.ts. */
export interface SimHostConfig {
  latency?: LatencyOptions | undefined;
  /** The events to forward; only these cost an IPC message each. */
  events: (keyof SimProcessEvents)[];
}

/** Parent → host. */
export type SimHostCommand = { type: "ping"; id: number } | { type: "close" };

/** Host → parent. */
export type SimHostMessage =
  | { type: "ready"; url: string }
  | { type: "pong"; id: number; at: number }
  | {
      [K in keyof SimProcessEvents]: { type: "event"; event: K; payload: SimProcessEvents[K] };
    }[keyof SimProcessEvents];

const HOST = fileURLToPath(new URL("./sim-host.ts", import.meta.url));
const CLOCK_PROBES = 30;

/**
 * The simulator running in a child process. Its events arrive over IPC after the fact, with the
 * host's timestamps converted to this process's clock (the offset is estimated from the fastest of
 * {@link CLOCK_PROBES} ping round trips, to within half of that round trip).
 */
export class SimProcess {
  readonly url: string;
  readonly #child: ChildProcess;
  readonly #listeners = new Map<keyof SimProcessEvents, Set<(payload: never) => void>>();
  readonly #pongs = new Map<number, (at: number) => void>();
  #offsetMs = 0;
  #offsetUncertaintyMs = Number.NaN;

  private constructor(child: ChildProcess, url: string) {
    this.#child = child;
    this.url = url;
    child.on("message", (message: SimHostMessage) => this.#receive(message));
  }

  /**
   * Starts the host process and measures its clock's offset. With `niceness` (1 to 19), the host runs
   * under `nice`, every thread of it: a benchmark about forkd's CPU lets the provider's stand-in take
   * only the cores that forkd leaves idle, as a remote provider would.
   */
  static async start(config: SimHostConfig, niceness?: number): Promise<SimProcess> {
    // The benchmark's own profiling flags (--cpu-prof…) stay with the benchmark's process.
    const execArgv = process.execArgv.filter((arg) => !/^--(cpu|heap)-prof/.test(arg));
    const configArg = JSON.stringify(config);
    // `nice` execs node in its own place (the same pid), before any of node's threads exist; setting the
    // priority afterwards would reach only the main thread (Linux's niceness is per thread).
    const child =
      niceness === undefined
        ? fork(HOST, [configArg], { execArgv, stdio: "inherit" })
        : spawn("nice", ["-n", String(niceness), process.execPath, ...execArgv, HOST, configArg], {
            stdio: ["inherit", "inherit", "inherit", "ipc"],
          });
    const url = await new Promise<string>((resolve, reject) => {
      const onMessage = (message: SimHostMessage) => {
        if (message.type !== "ready") return;
        child.off("exit", onExit);
        child.off("message", onMessage);
        resolve(message.url);
      };
      const onExit = (code: number | null) => reject(new Error(`the simulator process exited (${code})`));
      child.on("message", onMessage).once("exit", onExit);
    });
    const sim = new SimProcess(child, url);
    await sim.#calibrate();
    return sim;
  }

  /** The host's process id (for CPU meters). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Host clock − this clock, and the bound of its error (half the fastest round trip). @unit ms */
  get clock(): { offsetMs: number; uncertaintyMs: number } {
    return { offsetMs: this.#offsetMs, uncertaintyMs: this.#offsetUncertaintyMs };
  }

  on<K extends keyof SimProcessEvents>(event: K, listener: (payload: SimProcessEvents[K]) => void): this {
    const listeners = this.#listeners.get(event) ?? new Set();
    this.#listeners.set(event, listeners);
    listeners.add(listener as (payload: never) => void);
    return this;
  }

  off<K extends keyof SimProcessEvents>(event: K, listener: (payload: SimProcessEvents[K]) => void): this {
    this.#listeners.get(event)?.delete(listener as (payload: never) => void);
    return this;
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once("exit", resolve));
    this.#child.send({ type: "close" } satisfies SimHostCommand);
    await exited;
  }

  async #calibrate(): Promise<void> {
    let best = { rtt: Number.POSITIVE_INFINITY, offset: 0 };
    for (let id = 0; id < CLOCK_PROBES; id++) {
      const sent = now();
      const at = await new Promise<number>((resolve) => {
        this.#pongs.set(id, resolve);
        this.#child.send({ type: "ping", id } satisfies SimHostCommand);
      });
      const back = now();
      if (back - sent < best.rtt) best = { rtt: back - sent, offset: at - (sent + back) / 2 };
    }
    this.#offsetMs = best.offset;
    this.#offsetUncertaintyMs = best.rtt / 2;
  }

  #receive(message: SimHostMessage): void {
    if (message.type === "pong") {
      this.#pongs.get(message.id)?.(message.at);
      this.#pongs.delete(message.id);
      return;
    }
    if (message.type !== "event") return;
    const payload = message.payload;
    if ("receivedAt" in payload) {
      payload.receivedAt -= this.#offsetMs;
      if (payload.acceptedAt !== null) payload.acceptedAt -= this.#offsetMs;
    } else {
      payload.at -= this.#offsetMs;
    }
    for (const listener of this.#listeners.get(message.event) ?? [])
      (listener as (p: typeof payload) => void)(payload);
  }
}

/**
 * The simulator's requests by their bench tag. A request is reported when it is over, and over IPC,
 * so it may arrive after the fork's result: {@link get} waits for it.
 */
export class TaggedRequests {
  readonly #sim: SimProcess;
  readonly #seen = new Map<string, SeenRequest>();
  readonly #waiting = new Map<string, (request: SeenRequest) => void>();
  readonly #listener = (request: SeenRequest): void => {
    if (request.tag === undefined) return;
    this.#seen.set(request.tag, request);
    this.#waiting.get(request.tag)?.(request);
    this.#waiting.delete(request.tag);
  };

  constructor(sim: SimProcess) {
    this.#sim = sim;
    sim.on("request", this.#listener);
  }

  /** The request tagged `tag`, once the simulator has reported it; rejects after `timeoutMs`. */
  get(tag: string, timeoutMs = 10_000): Promise<SeenRequest> {
    const seen = this.#seen.get(tag);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(tag);
        reject(new Error(`the simulator never reported the request of ${tag}`));
      }, timeoutMs);
      this.#waiting.set(tag, (request) => {
        clearTimeout(timer);
        resolve(request);
      });
    });
  }

  close(): void {
    this.#sim.off("request", this.#listener);
  }
}
