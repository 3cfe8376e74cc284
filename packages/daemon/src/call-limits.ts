// The cluster-wide limits a model call obeys (#15, docs/budgets.md "Concurrency limits"): per provider
// key, per model and per tenant, each a CallLimiter on its own entry. A call takes a slot in every
// scope that applies, in one fixed order (the entries' keys, sorted) so that two calls can never each
// hold a slot the other waits for; it gives them all back when it ends, fails or is aborted, and
// gives back the ones it took when it is aborted while waiting for the next. The limits wrap any
// LlmClient: which client a run uses (Anthropic, OpenAI, any added later) does not matter, only its
// provider API (for the key) and the request's model.
import { createHash } from "node:crypto";
import { type LlmClient, LlmError } from "@forkd/core";
import type { KV } from "@nats-io/kv";
import { CallLimiter, type CallOwner } from "./call-limit.js";
import type { DaemonLogger } from "./logger.js";
import type { DaemonMetrics } from "./metrics.js";

/** The limits of a daemon's configuration; every daemon of the account should set the same. */
export interface CallLimitSettings {
  /** Calls at once per provider key (base URL and API key). */
  perKey?: number | undefined;
  /** Calls at once per model, for every model without its own entry in `models`. */
  perModel?: number | undefined;
  /** Calls at once of one model, by model name: overrides `perModel`. */
  models?: Readonly<Record<string, number>> | undefined;
  /** Calls at once of the whole tenant (`tenant`). */
  perTenant?: number | undefined;
  /** The tenant the daemon's calls count for. */
  tenant: string;
  /** A held slot's lease: how long a dead daemon's slots stay taken. @unit ms */
  leaseMs?: number | undefined;
}

/** Options of {@link CallLimits}. */
export interface CallLimitsOptions {
  /** The daemons bucket (parents may read it, only daemons write it). */
  kv: KV;
  daemonId: string;
  logger: DaemonLogger;
  metrics?: DaemonMetrics | undefined;
  settings: CallLimitSettings;
  /**
   * The key id (a hash of base URL and API key, never the key) a provider API's calls are made with.
   * An API it does not know is counted under a key of its own name.
   */
  keyIdOf: (api: string) => string | undefined;
  /** How long a scope with no call of this daemon keeps its watch (default 60 s). @unit ms */
  idleWatchMs?: number | undefined;
  /** False: the limiters poll their entries without a watch (bench #15's baseline). Default true. */
  watch?: boolean | undefined;
}

/** Whether `settings` limits anything. */
export function limitsAnything(settings: CallLimitSettings): boolean {
  return (
    settings.perKey !== undefined ||
    settings.perModel !== undefined ||
    settings.perTenant !== undefined ||
    Object.keys(settings.models ?? {}).length > 0
  );
}

/**
 * One token of a KV key for any name: letters, digits, `_` and `-` stay, every other UTF-16 unit
 * becomes `=` and four hex digits (`gpt-4.1` → `gpt-4=002e1`), so no two names share a token and a
 * dot in a model name cannot add a token to the key.
 */
export function limitKeyToken(name: string): string {
  if (name === "") return "=";
  const token = name.replace(
    /[^A-Za-z0-9_-]/g,
    (unit) => `=${unit.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  // A name a spec made long (its model) must still give a key NATS takes: past this length, `==` and
  // a hash (no spelled name holds `==`: `=` is always followed by four hex digits).
  return token.length <= MAX_TOKEN_LENGTH
    ? token
    : `==${createHash("sha256").update(name).digest("hex").slice(0, 32)}`;
}

/** The longest key token spelled out; a longer one is hashed. */
const MAX_TOKEN_LENGTH = 128;

/** A scope's readable name as the entry stores it (at most 512 characters). */
function scopeLabel(kind: string, name: string): string {
  const label = `${kind}:${name}`;
  return label.length <= 200 ? label : `${label.slice(0, 199)}…`;
}

interface Scope {
  key: string;
  scope: string;
  limit: number;
}

/** Every limit of a daemon: the scopes of each call, one {@link CallLimiter} per scope in use. */
export class CallLimits {
  readonly #options: CallLimitsOptions;
  readonly #limiters = new Map<string, CallLimiter>();

  constructor(options: CallLimitsOptions) {
    this.#options = options;
  }

  /** The scopes a call to `api` with `model` takes a slot in, in the order it takes them. */
  scopesOf(api: string, model: string): Scope[] {
    const { settings, keyIdOf } = this.#options;
    const scopes: Scope[] = [];
    if (settings.perKey !== undefined) {
      const keyId = keyIdOf(api) ?? createHash("sha256").update(`api\0${api}`).digest("hex").slice(0, 16);
      scopes.push({ key: `limit.key.${keyId}`, scope: `key:${keyId}`, limit: settings.perKey });
    }
    const perModel = settings.models?.[model] ?? settings.perModel;
    if (perModel !== undefined)
      scopes.push({
        key: `limit.model.${limitKeyToken(model)}`,
        scope: scopeLabel("model", model),
        limit: perModel,
      });
    if (settings.perTenant !== undefined)
      scopes.push({
        key: `limit.tenant.${limitKeyToken(settings.tenant)}`,
        scope: scopeLabel("tenant", settings.tenant),
        limit: settings.perTenant,
      });
    // One order for every daemon and every call: no call holds a slot another waits for while it
    // waits for one that other holds.
    return scopes.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /**
   * A model client whose every call holds a slot of each limit that applies while it runs. A call
   * still waiting for a slot when `call.stopSignal` aborts (the run's graceful stop) is never sent: it
   * rejects with `LlmError("not_started")`, and the turn loop ends the run stopped.
   */
  wrap(llm: LlmClient, call: CallOwner & { api: string; stopSignal?: AbortSignal | undefined }): LlmClient {
    return {
      createMessage: async (request, options) => {
        const releases: (() => void)[] = [];
        const signals = [options?.signal, call.stopSignal].filter((s): s is AbortSignal => s !== undefined);
        const waiting = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
        try {
          for (const scope of this.scopesOf(call.api, request.model)) {
            try {
              releases.push(await this.#limiter(scope).acquire(call, waiting));
            } catch (error) {
              if (call.stopSignal?.aborted && !options?.signal?.aborted)
                throw new LlmError("not_started", "the run was stopped while its call waited for a slot", {
                  cause: error,
                });
              throw error;
            }
          }
          return await llm.createMessage(request, options);
        } finally {
          for (const release of releases.reverse()) release();
        }
      },
    };
  }

  /** Stops the limiters' watches (at shutdown, once the runs are gone). */
  close(): void {
    for (const limiter of this.#limiters.values()) limiter.close();
  }

  #limiter(scope: Scope): CallLimiter {
    let limiter = this.#limiters.get(scope.key);
    if (limiter !== undefined) return limiter;
    const { kv, daemonId, logger, metrics, settings } = this.#options;
    const label = { scope: scope.scope };
    metrics?.callLimit.set(label, scope.limit);
    limiter = new CallLimiter({
      kv,
      key: scope.key,
      scope: scope.scope,
      limit: scope.limit,
      daemonId,
      logger,
      leaseMs: settings.leaseMs,
      idleWatchMs: this.#options.idleWatchMs,
      watch: this.#options.watch,
      onChange: (held, waiting) => {
        metrics?.callSlots.set({ ...label, state: "held" }, held);
        metrics?.callSlots.set({ ...label, state: "waiting" }, waiting);
      },
      onGranted: (waitedMs, queued) => {
        metrics?.callSlotWait.observe(label, waitedMs / 1000);
        if (queued) metrics?.callSlotWaits.inc(label);
      },
    });
    this.#limiters.set(scope.key, limiter);
    return limiter;
  }
}
