// The lifecycle of the simulator's exchanges: each opened with its id, its response's first byte
// (cache writes become readable, input is charged), its client leaving early, and its end (logged
// once, whatever ended it).
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PromptCache } from "./cache.js";
import { hiResNow } from "./clock.js";
import { type Exchange, GONE, openExchange } from "./exchange.js";
import type { RequestLog } from "./log.js";
import type { SimEventBus } from "./sim-events.js";
import type { Usage } from "./types.js";

/** The exchanges of one simulator, numbered in arrival order. */
export class Exchanges {
  readonly #cache: PromptCache;
  readonly #log: RequestLog;
  readonly #events: SimEventBus;
  /** Part of every request id: ids of two simulators never collide. */
  readonly #instance = randomBytes(3).toString("hex");
  readonly #inFlight = new Set<Exchange>();
  #seq = 0;
  #closing = false;

  constructor(parts: { cache: PromptCache; log: RequestLog; events: SimEventBus }) {
    this.#cache = parts.cache;
    this.#log = parts.log;
    this.#events = parts.events;
  }

  /** A new exchange for `req`, its id in the `request-id` header; `path` without trailing slashes. */
  open(req: IncomingMessage, res: ServerResponse): { ex: Exchange; url: URL } {
    const seq = ++this.#seq;
    const id = `req_sim${this.#instance}${seq.toString(36).padStart(8, "0")}`;
    const receivedAt = hiResNow();
    const url = new URL(req.url ?? "/", "http://sim");
    const path = url.pathname.replace(/\/+$/, "") || "/";
    res.setHeader("request-id", id);
    return { ex: openExchange(req, res, { seq, id, path, receivedAt }), url };
  }

  /**
   * Follows an exchange to its end: when its connection closes, it is aborted, a client that left
   * before the response was complete is reported (`disconnect`), and it is logged.
   */
  track(ex: Exchange): void {
    this.#inFlight.add(ex);
    ex.res.on("close", () => {
      ex.abort.abort(GONE);
      if (!ex.res.writableFinished && !ex.entry.cut && !this.#closing) {
        const at = hiResNow();
        ex.entry.disconnected = true;
        ex.entry.disconnectedAt = at;
        this.#events.emit("disconnect", {
          seq: ex.seq,
          id: ex.id,
          at,
          afterFirstByte: ex.entry.firstByteAt !== null,
          outputTokensSent: ex.entry.outputTokensSent,
        });
      }
      this.finish(ex);
    });
  }

  /** The response starts: cache writes become readable, input is charged. */
  firstByte(ex: Exchange, stream: boolean): void {
    const at = hiResNow();
    ex.entry.firstByteAt = at;
    if (ex.plan !== undefined) this.#cache.commit(ex.plan);
    if (ex.inputUsage !== undefined && this.#events.listening("firstByte")) {
      this.#events.emit("firstByte", {
        seq: ex.seq,
        id: ex.id,
        at,
        stream,
        usage: { ...ex.inputUsage, output_tokens: ex.outputTokens } as Usage,
      });
    }
  }

  /** The exchange is over: its cache claim dropped if never committed, its usage and entry logged, once. */
  finish(ex: Exchange): void {
    if (ex.logged) return;
    ex.logged = true;
    this.#inFlight.delete(ex);
    const e = ex.entry;
    e.endedAt = hiResNow();
    if (ex.plan !== undefined) this.#cache.abandon(ex.plan); // no-op once committed
    if (ex.inputUsage !== undefined && e.firstByteAt !== null) {
      e.usage = { ...ex.inputUsage, output_tokens: e.outputTokensSent } as Usage;
    }
    this.#log.add(e);
    this.#events.emit("request", e);
  }

  /** The server is closing: every exchange in flight is aborted, and none counts as a client leaving. */
  abortAll(): void {
    this.#closing = true;
    for (const ex of this.#inFlight) ex.abort.abort(GONE);
  }

  /** Logs what is still in flight (after the server closed). */
  finishAll(): void {
    for (const ex of [...this.#inFlight]) this.finish(ex);
  }
}
