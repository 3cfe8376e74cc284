// The JetStream resources forkd needs, created idempotently by whichever side starts first.

import {
  DEFAULT_SUBJECT_PREFIX,
  type ForkSubjects,
  forkSubjects,
  MAX_EVENT_BYTES,
  MAX_SPEC_BYTES,
} from "@forkd/protocol";
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { type ObjectStore, Objm } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { ClientError } from "./errors.js";
import { isAlreadyExists } from "./jetstream-errors.js";

const nanos = (ms: number) => ms * 1_000_000;
const WEEK_MS = 7 * 24 * 60 * 60 * 1000;

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

/** Handles on every resource, ready to use. */
export interface ForkResources {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly subjects: ForkSubjects;
  readonly runs: KV;
  readonly daemons: KV;
  readonly prefixes: ObjectStore;
  readonly options: ResolvedForkResourceOptions;
}

/** Applies defaults; `replicas: "auto"` looks at the server the connection is on. */
export function resolveResourceOptions(
  nc: NatsConnection,
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
    eventsMaxAgeMs: options.eventsMaxAgeMs ?? 24 * 60 * 60 * 1000,
    duplicateWindowMs: options.duplicateWindowMs ?? 120_000,
    daemonTtlMs: options.daemonTtlMs ?? 30_000,
    specsMaxAgeMs: options.specsMaxAgeMs ?? WEEK_MS,
    specsMaxBytes: options.specsMaxBytes ?? 256 * 1024 ** 2,
    eventsMaxBytes: options.eventsMaxBytes ?? 4 * 1024 ** 3,
    runsTtlMs: options.runsTtlMs ?? WEEK_MS,
    runsMaxBytes: options.runsMaxBytes ?? 128 * 1024 ** 2,
    prefixesTtlMs: options.prefixesTtlMs ?? WEEK_MS,
    prefixesMaxBytes: options.prefixesMaxBytes ?? 2 * 1024 ** 3,
  };
}

async function ensureStream(
  jsm: JetStreamManager,
  config: Parameters<JetStreamManager["streams"]["add"]>[0],
) {
  const name = config.name!;
  try {
    await jsm.streams.info(name);
    return;
  } catch {
    // not found: create below
  }
  try {
    await jsm.streams.add(config);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}

/**
 * Creates (or opens) the specs and events streams, the shared daemon consumer, the runs and daemons
 * KV buckets and the prefix object store. Safe to call from any number of processes at once.
 */
export async function ensureForkResources(
  nc: NatsConnection,
  options: ForkResourceOptions = {},
): Promise<ForkResources> {
  const resolved = resolveResourceOptions(nc, options);
  const subjects = forkSubjects(resolved.prefix);
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    await ensureStream(jsm, {
      name: subjects.streams.specs,
      subjects: [subjects.allSpecs],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: resolved.replicas,
      duplicate_window: nanos(resolved.duplicateWindowMs),
      // One spec per run id at a time, and the server refuses the second (error 10077) instead of
      // replacing the first: while a run's spec is queued or running, no other parent can store
      // another spec for its id. The daemons still check ownership (streams made before this).
      max_msgs_per_subject: 1,
      discard: DiscardPolicy.New,
      discard_new_per_subject: true,
      max_age: nanos(resolved.specsMaxAgeMs),
      max_bytes: resolved.specsMaxBytes,
      max_msg_size: MAX_SPEC_BYTES,
    });
    await ensureStream(jsm, {
      name: subjects.streams.events,
      subjects: [subjects.allEvents],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      num_replicas: resolved.replicas,
      max_age: nanos(resolved.eventsMaxAgeMs),
      max_bytes: resolved.eventsMaxBytes,
      max_msg_size: MAX_EVENT_BYTES,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(resolved.duplicateWindowMs),
    });
    try {
      await jsm.consumers.info(subjects.streams.specs, subjects.specsConsumer);
    } catch {
      try {
        await jsm.consumers.add(subjects.streams.specs, {
          durable_name: subjects.specsConsumer,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ack_wait: nanos(resolved.ackWaitMs),
          max_deliver: resolved.maxDeliver,
          max_ack_pending: 10_000,
          max_waiting: 4096,
        });
      } catch (error) {
        if (!isAlreadyExists(error)) throw error;
      }
    }
    const kvm = new Kvm(js);
    const runs = await kvm.create(subjects.buckets.runs, {
      replicas: resolved.replicas,
      history: 1,
      ttl: resolved.runsTtlMs,
      max_bytes: resolved.runsMaxBytes,
      maxValueSize: MAX_EVENT_BYTES,
    });
    const daemons = await kvm.create(subjects.buckets.daemons, {
      replicas: resolved.replicas,
      history: 1,
      ttl: resolved.daemonTtlMs,
    });
    const prefixes = await new Objm(js).create(subjects.buckets.prefixes, {
      replicas: resolved.replicas,
      ttl: nanos(resolved.prefixesTtlMs),
      max_bytes: resolved.prefixesMaxBytes,
    });
    return { nc, js, jsm, subjects, runs, daemons, prefixes, options: resolved };
  } catch (cause) {
    throw new ClientError(
      "infrastructure",
      `cannot create forkd's JetStream resources: ${(cause as Error).message}`,
      {
        retryable: true,
        cause,
      },
    );
  }
}
