// NATS subject names and JetStream resource names, derived from one configurable prefix.
import { ProtocolError } from "./errors.js";
import { MAX_RUN_ID_LENGTH } from "./limits.js";

/** Default subject prefix. Tenants are separated by NATS accounts, not by prefixes. */
export const DEFAULT_SUBJECT_PREFIX = "agent";

/**
 * The inbox prefix of a daemon's connection: every reply and delivery it receives (the specs it pulls,
 * the specs it reads back, the owner's permission answers, a tool host's replies) arrives on
 * `_FORKD_DAEMON_INBOX.…`. On the default `_INBOX.…`, which parents and observers may subscribe to
 * for their own replies, any of them read each spec a daemon pulled — its `owner_token` and tool-host
 * `reply_key` included — and could then abort, steer or answer for every run of the account. The
 * deployed permissions let only daemons subscribe to this prefix (`deploy/nats/accounts.conf`).
 */
export const DAEMON_INBOX_PREFIX = "_FORKD_DAEMON_INBOX";

/**
 * Characters of a run id (and of a daemon or tool-host id): one NATS subject token that is also a
 * valid JetStream KV key, object name and part of a `Nats-Msg-Id`. No `.`, `*`, `>` or whitespace.
 */
export const RUN_ID_PATTERN = /^[A-Za-z0-9_=-]+$/;
const PREFIX_PATTERN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** True when `runId` can stand as one NATS subject token and one KV key. */
export function isValidRunId(runId: unknown): runId is string {
  return (
    typeof runId === "string" &&
    runId.length > 0 &&
    runId.length <= MAX_RUN_ID_LENGTH &&
    RUN_ID_PATTERN.test(runId)
  );
}

/** Throws `invalid_subject_token` unless {@link isValidRunId}. */
export function assertValidRunId(runId: unknown): asserts runId is string {
  assertToken(runId, "run id");
}

function assertToken(value: unknown, what: string): asserts value is string {
  if (!isValidRunId(value)) {
    const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 80)) : typeof value;
    throw new ProtocolError(
      "invalid_subject_token",
      `${what} ${shown} is not a single NATS token: use 1-${MAX_RUN_ID_LENGTH} characters from [A-Za-z0-9_=-]`,
    );
  }
}

/** Every subject and JetStream resource name forkd uses, for one prefix. */
export interface ForkSubjects {
  /** The subject prefix every name here starts with (`agent`): not to be confused with a fork's prefix, the parent conversation. */
  readonly subjectPrefix: string;
  /** `agent.fork.<run_id>`: the fork spec (work-queue stream). */
  spec(runId: string): string;
  /** `agent.fork.<run_id>.events`: the run's event log (limits stream). */
  events(runId: string): string;
  /** `agent.fork.<run_id>.abort`: core NATS, the fast path of an abort. */
  abort(runId: string): string;
  /** `agent.fork.<run_id>.steer`: request/reply from a parent to the daemon running the run (a steering message). */
  steer(runId: string): string;
  /** `agent.fork.<run_id>.permission`: request/reply from the daemon to the parent for a tool call that needs approval. */
  permission(runId: string): string;
  /** `agent.toolhost.<host_id>`: request/reply to a process that serves tools for remote forks. */
  toolHost(hostId: string): string;
  /** `agent.presence.<daemon_id>`: core NATS, a daemon's presence beats (the runs it holds). */
  presence(daemonId: string): string;
  /** `agent.presence.*`: every daemon's presence; each daemon follows the others'. */
  readonly allPresence: string;
  /** `agent.provider.throttle`: core NATS, "the provider said slow down" from one daemon to the others. */
  readonly providerThrottle: string;
  /** `agent.fork.*`: every spec (the work-queue stream's subject). */
  readonly allSpecs: string;
  /** `agent.fork.*.events`: every event (the events stream's subject). */
  readonly allEvents: string;
  /** `agent.fork.*.abort`: every abort; each daemon holds one wildcard subscription on it. */
  readonly allAborts: string;
  /** `agent.fork.*.steer`: every steering message; each daemon answers those of the runs it holds. */
  readonly allSteers: string;
  /** `agent.fork.*.permission`: every permission request; a parent answers those of its own runs. */
  readonly allPermissions: string;
  /**
   * The run token of one of this prefix's run subjects (`agent.fork.<run_id>` or
   * `agent.fork.<run_id>.events|abort|permission|steer`), or `undefined` for any other subject. The token
   * is not checked with {@link isValidRunId}: a spec stored under an invalid one must still be
   * named, to be refused and removed.
   */
  runIdOf(subject: string): string | undefined;
  readonly streams: { readonly specs: string; readonly events: string };
  /** Durable consumer shared by every daemon on the specs stream. */
  readonly specsConsumer: string;
  readonly buckets: { readonly runs: string; readonly daemons: string; readonly prefixes: string };
  /** The streams JetStream keeps the buckets in (`KV_<bucket>`, `OBJ_<store>`), for limits and purges. */
  readonly bucketStreams: { readonly runs: string; readonly daemons: string; readonly prefixes: string };
}

const RUN_SUBJECT_KINDS = new Set(["events", "abort", "permission", "steer"]);

/**
 * Builds the subject and resource names for `prefix`.
 * @param prefix dot-separated tokens of `[A-Za-z0-9_-]`. @default "agent"
 */
export function forkSubjects(prefix: string = DEFAULT_SUBJECT_PREFIX): ForkSubjects {
  if (!PREFIX_PATTERN.test(prefix)) {
    throw new ProtocolError("invalid_subject_token", `subject prefix ${JSON.stringify(prefix)} is not valid`);
  }
  const name = prefix.replace(/[.-]/g, "_");
  const upper = name.toUpperCase();
  const run = (runId: string) => {
    assertValidRunId(runId);
    return `${prefix}.fork.${runId}`;
  };
  return {
    subjectPrefix: prefix,
    spec: run,
    events: (runId) => `${run(runId)}.events`,
    abort: (runId) => `${run(runId)}.abort`,
    permission: (runId) => `${run(runId)}.permission`,
    steer: (runId) => `${run(runId)}.steer`,
    toolHost: (hostId) => {
      assertToken(hostId, "tool host id");
      return `${prefix}.toolhost.${hostId}`;
    },
    presence: (daemonId) => {
      assertToken(daemonId, "daemon id");
      return `${prefix}.presence.${daemonId}`;
    },
    allPresence: `${prefix}.presence.*`,
    providerThrottle: `${prefix}.provider.throttle`,
    allSpecs: `${prefix}.fork.*`,
    allEvents: `${prefix}.fork.*.events`,
    allAborts: `${prefix}.fork.*.abort`,
    allPermissions: `${prefix}.fork.*.permission`,
    allSteers: `${prefix}.fork.*.steer`,
    runIdOf: (subject) => {
      const head = `${prefix}.fork.`;
      if (!subject.startsWith(head)) return undefined;
      const [runId, kind, ...rest] = subject.slice(head.length).split(".");
      if (runId === undefined || runId === "" || rest.length > 0) return undefined;
      return kind === undefined || RUN_SUBJECT_KINDS.has(kind) ? runId : undefined;
    },
    streams: { specs: `${upper}_FORK_SPECS`, events: `${upper}_FORK_EVENTS` },
    specsConsumer: `${name}_fork_daemons`,
    buckets: {
      runs: `${name}_fork_runs`,
      daemons: `${name}_fork_daemons`,
      prefixes: `${name}_fork_prefixes`,
    },
    bucketStreams: {
      runs: `KV_${name}_fork_runs`,
      daemons: `KV_${name}_fork_daemons`,
      prefixes: `OBJ_${name}_fork_prefixes`,
    },
  };
}

/**
 * `Nats-Msg-Id` of an event: JetStream's duplicate window drops a republished `(run, seq)`.
 * Throws `invalid_subject_token` for a bad run id and `invalid_event` unless `seq` is a positive integer.
 */
export function eventMsgId(runId: string, seq: number): string {
  assertValidRunId(runId);
  if (!Number.isSafeInteger(seq) || seq < 1) {
    throw new ProtocolError("invalid_event", `event seq ${String(seq)} is not a positive integer`, {
      path: ["seq"],
    });
  }
  return `${runId}-${seq}`;
}
