// The options of forkd's JetStream resources and their defaults: pure, so that unit tests pin them
// (resources.ts creates the resources).
import { DEFAULT_SUBJECT_PREFIX } from "@forkd/protocol";

const HOUR_MS = 60 * 60 * 1000;
const WEEK_MS = 7 * 24 * HOUR_MS;

/** Options of the JetStream resources. Both the client and the daemon take them; they must agree. */
export interface ForkResourceOptions {
  /** Subject prefix. @default "agent" */
  prefix?: string;
  /** Stream, KV and object store replicas. `"auto"` is 3 when the server is in a cluster, else 1. @default "auto" */
  replicas?: number | "auto";
  /** How long a daemon holds a spec without acking or signalling progress before it is redelivered. @unit ms @default 30000 */
  ackWaitMs?: number;
  /** Deliveries of one spec before its run is failed. @default 5 */
  maxDeliver?: number;
  /** How long events are kept. @unit ms @default 86400000 (24 h) */
  eventsMaxAgeMs?: number;
  /** Window in which JetStream drops a republished `Nats-Msg-Id`. @unit ms @default 120000 */
  duplicateWindowMs?: number;
  /** A daemon entry expires this long after its last heartbeat. @unit ms @default 30000 */
  daemonTtlMs?: number;
  /** A spec still queued this long after it was published is dropped (its run never starts). @unit ms @default 604800000 (7 days) */
  specsMaxAgeMs?: number;
  /** Bytes of queued specs; beyond it new specs are refused (the publish fails), queued ones are kept. @unit bytes @default 268435456 (256 MiB) */
  specsMaxBytes?: number;
  /** Bytes of events; beyond it the oldest events are dropped (finished runs' logs go first, being the oldest). @unit bytes @default 4294967296 (4 GiB) */
  eventsMaxBytes?: number;
  /** A run's registry entry is removed this long after its last write (an ended run's record; live runs rewrite theirs on every heartbeat). @unit ms @default 604800000 (7 days) */
  runsTtlMs?: number;
  /**
   * A finished run's registry entry and events are removed this long after it ended, by the daemon
   * that holds the retention lease (docs/operations.md, "Retention"). Queued and running runs are
   * never removed, however old. @unit ms @default 21600000 (6 h)
   */
  retentionMs?: number;
  /**
   * A stored prefix that no queued or running run refers to is removed this long after its last
   * use; a parent uploads it again when it forks from it later. @unit ms @default 3600000 (1 h)
   */
  prefixRetentionMs?: number;
  /** Bytes of the run registry; beyond it new entries are refused. @unit bytes @default 134217728 (128 MiB) */
  runsMaxBytes?: number;
  /** A stored prefix is removed this long after its upload; a parent uploads it again when it is gone. @unit ms @default 604800000 (7 days) */
  prefixesTtlMs?: number;
  /** Bytes of stored prefixes; beyond it new uploads are refused. @unit bytes @default 2147483648 (2 GiB) */
  prefixesMaxBytes?: number;
}

/** The options with every default applied. */
export type ResolvedForkResourceOptions = Required<Omit<ForkResourceOptions, "replicas">> & {
  replicas: number;
};

/** Applies defaults; `replicas: "auto"` looks at the server the connection is on. */
export function resolveResourceOptions(
  nc: { readonly info?: { readonly cluster?: string | undefined } | undefined },
  options: ForkResourceOptions = {},
): ResolvedForkResourceOptions {
  const inCluster = Boolean(nc.info?.cluster);
  const replicas =
    options.replicas === undefined || options.replicas === "auto" ? (inCluster ? 3 : 1) : options.replicas;
  return {
    prefix: options.prefix ?? DEFAULT_SUBJECT_PREFIX,
    replicas,
    ackWaitMs: options.ackWaitMs ?? 30_000,
    maxDeliver: options.maxDeliver ?? 5,
    eventsMaxAgeMs: options.eventsMaxAgeMs ?? 24 * HOUR_MS,
    duplicateWindowMs: options.duplicateWindowMs ?? 120_000,
    daemonTtlMs: options.daemonTtlMs ?? 30_000,
    specsMaxAgeMs: options.specsMaxAgeMs ?? WEEK_MS,
    specsMaxBytes: options.specsMaxBytes ?? 256 * 1024 ** 2,
    eventsMaxBytes: options.eventsMaxBytes ?? 4 * 1024 ** 3,
    runsTtlMs: options.runsTtlMs ?? WEEK_MS,
    retentionMs: options.retentionMs ?? 6 * HOUR_MS,
    prefixRetentionMs: options.prefixRetentionMs ?? HOUR_MS,
    runsMaxBytes: options.runsMaxBytes ?? 128 * 1024 ** 2,
    prefixesTtlMs: options.prefixesTtlMs ?? WEEK_MS,
    prefixesMaxBytes: options.prefixesMaxBytes ?? 2 * 1024 ** 3,
  };
}
