/**
 * Faults: what can go wrong on purpose, how a fault is written in a script or options, and the
 * seeded generator that injects faults at a rate. Same seed, same order of requests → same faults.
 */
import { type ApiErrorType, errorTypeOfStatus } from "./errors.js";

/** A fault the server can inject into one request. */
export type FaultSpec =
  /** Answer with an error status (before anything is cached or generated). */
  | { kind: "status"; status: number; errorType: ApiErrorType; retryAfterSeconds?: number }
  /** Start answering, send this many output tokens, then destroy the connection. */
  | { kind: "cut"; afterTokens: number }
  /** Start streaming, send this many output tokens, then an SSE `error` event (the mid-stream `overloaded_error`). */
  | { kind: "stream-error"; afterTokens: number; errorType: ApiErrorType };

/**
 * Parses a fault as written after `@sim fault` / `@sim fault-once` (or `--fault`):
 * `429 [retry-after=<seconds>]`, `529`, `500`, any other status, `cut-after=<tokens>`,
 * `error-after=<tokens> [<error type>]`.
 * @throws {Error} with a message saying what is wrong
 */
export function parseFault(text: string): FaultSpec {
  const words = text
    .trim()
    .split(/\s+/)
    .filter((w) => w !== "");
  const first = words[0];
  if (first === undefined) throw new Error("fault needs a status or cut-after=<tokens>");
  const opts = new Map<string, string>();
  const rest: string[] = [];
  for (const w of words.slice(1)) {
    const eq = w.indexOf("=");
    if (eq > 0) opts.set(w.slice(0, eq), w.slice(eq + 1));
    else rest.push(w);
  }
  const count = (v: string | undefined, what: string): number => {
    const n = Number(v);
    if (v === undefined || !Number.isInteger(n) || n < 0)
      throw new Error(`${what} must be a whole number ≥ 0, got "${v ?? ""}"`);
    return n;
  };
  if (first.startsWith("cut-after="))
    return { kind: "cut", afterTokens: count(first.slice(10), "cut-after") };
  if (first.startsWith("error-after=")) {
    const errorType = (rest[0] ?? "overloaded_error") as ApiErrorType;
    return { kind: "stream-error", afterTokens: count(first.slice(12), "error-after"), errorType };
  }
  const status = Number(first);
  if (!Number.isInteger(status) || status < 400 || status > 599) {
    throw new Error(
      `unknown fault "${first}": expected an HTTP status 400-599, cut-after=<n> or error-after=<n>`,
    );
  }
  const spec: FaultSpec = { kind: "status", status, errorType: errorTypeOfStatus(status) };
  const ra = opts.get("retry-after");
  if (ra !== undefined) {
    const s = Number(ra);
    if (!Number.isFinite(s) || s < 0) throw new Error(`retry-after must be seconds ≥ 0, got "${ra}"`);
    spec.retryAfterSeconds = s;
  }
  return spec;
}

/** A short human form of a fault, as the request log shows it. */
export function describeFault(f: FaultSpec): string {
  switch (f.kind) {
    case "status":
      return f.retryAfterSeconds === undefined
        ? `${f.status}`
        : `${f.status} retry-after=${f.retryAfterSeconds}`;
    case "cut":
      return `cut-after=${f.afterTokens}`;
    case "stream-error":
      return `error-after=${f.afterTokens} ${f.errorType}`;
  }
}

/** Random faults at a rate. */
export interface FaultRateOptions {
  /** Probability that a request gets a fault, 0..1. */
  rate: number;
  /** PRNG seed. @default 1 */
  seed?: number | undefined;
  /**
   * Faults to choose from (uniformly).
   * @default 429, 529 and 500
   */
  kinds?: readonly FaultSpec[] | undefined;
}

/** mulberry32: a small, fast, seeded PRNG returning numbers in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const DEFAULT_KINDS: readonly FaultSpec[] = [parseFault("429"), parseFault("529"), parseFault("500")];

/** Draws rate faults in request order and remembers which requests a `fault-once` already hit. */
export class FaultInjector {
  readonly #rate: number;
  readonly #kinds: readonly FaultSpec[];
  readonly #random: () => number;
  readonly #seenOnce = new Set<string>();

  constructor(options?: FaultRateOptions) {
    this.#rate = options?.rate ?? 0;
    this.#kinds = options?.kinds !== undefined && options.kinds.length > 0 ? options.kinds : DEFAULT_KINDS;
    this.#random = mulberry32(options?.seed ?? 1);
  }

  /** The next rate fault, or null. Consumes the sequence only when the rate is above 0. */
  draw(): FaultSpec | null {
    if (this.#rate <= 0) return null;
    if (this.#random() >= this.#rate) return null;
    return this.#kinds[Math.floor(this.#random() * this.#kinds.length)] ?? null;
  }

  /** True the first time `key` is seen (a `fault-once` fires), false afterwards. */
  firstTime(key: string): boolean {
    if (this.#seenOnce.has(key)) return false;
    this.#seenOnce.add(key);
    return true;
  }

  clear(): void {
    this.#seenOnce.clear();
  }
}

/** What the simulated API says with each fault it injects. */
export const FAULT_MESSAGES: Partial<Record<ApiErrorType, string>> = {
  rate_limit_error: "This request would exceed your rate limit (simulated fault).",
  overloaded_error: "Overloaded",
  api_error: "Internal server error (simulated fault)",
};
