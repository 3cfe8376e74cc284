// The parent's view of a fork, the same whether it runs in this process or on a daemon over NATS.
import type {
  ForkCall,
  ForkEvent,
  ForkPrefix,
  ForkResult,
  Isolation,
  Limits,
  Overrides,
  ParentIdentity,
  PermissionPolicy,
  ProviderSpec,
  ToolFilterSpec,
  UsageTotals,
  WireError,
} from "@forkd/protocol";

/** What the parent asks for when it forks one child. */
export interface ForkParams {
  /**
   * The parent's last request and reply. `null` for a parent on its first turn: nothing can be shared.
   * Not changed once forked from: what is derived from it (its bytes, its cache key) is computed once
   * per prefix object and reused by its siblings (`createForkPrefix` makes a new one per turn).
   */
  prefix: ForkPrefix | null;
  /** What the child is asked to do. */
  directive: string;
  /** Which of the parent's fork tool calls this child answers; told to the child in its directive block. */
  forkCall?: ForkCall;
  /** Set to choose the run id (idempotent resubmission); otherwise a UUIDv7 is generated. */
  runId?: string;
  parent: Omit<ParentIdentity, "lineage"> & { lineage?: string[] };
  label?: string;
  /** Query source of the forking agent, checked by the recursion guard. @default "agent" */
  querySource?: string;
  toolFilter?: ToolFilterSpec;
  overrides?: Partial<Overrides>;
  limits?: Partial<Limits>;
  isolation?: Partial<Isolation>;
  permissions?: Partial<PermissionPolicy>;
  /** Absolute deadline. @unit ms since epoch */
  deadlineAt?: number;
  /** The provider API that runs the child (and its OpenAI `prompt_cache_key`). @default Anthropic's Messages API */
  provider?: ProviderSpec;
  /**
   * The group the run joins (one NATS token): recorded in the registry and on every event, so the
   * group can be stopped or aborted as one. A fan-out makes one for its children when absent.
   */
  groupId?: string;
}

/** How a run ended, as the parent sees it. A user's abort is `killed`, not a failure. */
export type ForkOutcome =
  | { status: "completed"; runId: string; result: ForkResult }
  | { status: "failed"; runId: string; error: WireError; usage: UsageTotals }
  | { status: "timeout"; runId: string; error: WireError; usage: UsageTotals }
  | { status: "killed"; runId: string; reason: string; usage: UsageTotals };

/** A running fork. Returned at once by {@link ForkSubagent.fork}. */
export interface ForkHandle extends AsyncDisposable {
  readonly runId: string;
  /**
   * The run's events from seq 1, then live until the terminal event; gap-free and without duplicates.
   * Each call starts a new replay. Breaking out of the loop releases the subscription.
   */
  events(options?: { signal?: AbortSignal }): AsyncIterable<ForkEvent>;
  /** Resolves when the run ends; never rejects for the run's own failure (see {@link ForkOutcome}). */
  result(options?: { signal?: AbortSignal }): Promise<ForkOutcome>;
  /** Asks the run to stop. Resolves once the request is sent (not when the run has stopped). */
  abort(reason?: string): Promise<void>;
}

/** Something that runs forks: in this process, or on a cluster. */
export interface ForkSubagent {
  /** Starts a child and returns its handle at once. Throws only for invalid params. */
  fork(params: ForkParams): ForkHandle;
}
