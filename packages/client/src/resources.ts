// The JetStream resources forkd needs, created idempotently by whichever side starts first.

import { type ForkSubjects, forkSubjects, MAX_EVENT_BYTES, MAX_SPEC_BYTES } from "@forkd/protocol";
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
  type StreamConfig,
} from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { type ObjectStore, Objm } from "@nats-io/obj";
import { type NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import { ClientError } from "./errors.js";
import { isAlreadyExists } from "./jetstream-errors.js";
import {
  type ForkResourceOptions,
  type ResolvedForkResourceOptions,
  resolveResourceOptions,
} from "./resource-options.js";

const nanos = (ms: number) => ms * 1_000_000;

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
  /**
   * True when the specs stream keeps one spec per run id and the server refuses a second
   * (`max_msgs_per_subject: 1`, `discard: new`, `discard_new_per_subject`): a spec a daemon holds is
   * then the only one stored for its run, and so the run's owner, whatever the registry (which every
   * parent of the account can write) says. False on a stream made before that guard.
   */
  readonly specsOnePerRun: boolean;
}

/** Creates the stream unless it exists; returns its configuration as stored (an existing one's own). */
async function ensureStream(
  jsm: JetStreamManager,
  config: Parameters<JetStreamManager["streams"]["add"]>[0],
): Promise<StreamConfig> {
  const name = config.name!;
  try {
    return (await jsm.streams.info(name)).config;
  } catch {
    // not found: create below
  }
  try {
    return (await jsm.streams.add(config)).config;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    return (await jsm.streams.info(name)).config;
  }
}

/**
 * Runs a create-or-open (a stream, a bucket) once more when it fails. Processes that start together
 * race to add each stream, and nats-server can answer the loser "subjects overlap" (10065) rather
 * than "name in use" (10058); the second try finds the winner's stream. The first error stands if
 * that fails too (a stream of another name holding the subjects, say).
 */
async function createOrOpen<T>(create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (error) {
    try {
      return await create();
    } catch {
      throw error;
    }
  }
}

/** True for a specs stream whose server refuses a second spec for a run id while one is stored. */
function keepsOneSpecPerRun(config: StreamConfig): boolean {
  return (
    config.max_msgs_per_subject === 1 &&
    config.discard === DiscardPolicy.New &&
    config.discard_new_per_subject === true
  );
}

// A request refused by the server's permissions: nats.js rejects it with a RequestError caused by one.
function isPermissionViolation(error: unknown): boolean {
  return (
    error instanceof PermissionViolationError ||
    (error instanceof Error && error.cause instanceof PermissionViolationError)
  );
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
    const specsConfig = await createOrOpen(() =>
      ensureStream(jsm, {
        name: subjects.streams.specs,
        subjects: [subjects.allSpecs],
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        num_replicas: resolved.replicas,
        duplicate_window: nanos(resolved.duplicateWindowMs),
        // One spec per run id at a time, and the server refuses the second (error 10077) instead of
        // replacing the first: while a run's spec is queued or running, no other parent can store
        // another spec for its id. The daemons check ownership themselves on streams made before this.
        max_msgs_per_subject: 1,
        discard: DiscardPolicy.New,
        discard_new_per_subject: true,
        max_age: nanos(resolved.specsMaxAgeMs),
        max_bytes: resolved.specsMaxBytes,
        max_msg_size: MAX_SPEC_BYTES,
      }),
    );
    await createOrOpen(() =>
      ensureStream(jsm, {
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
      }),
    );
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
        // The consumer is the daemons' alone: creating it with the config of one's choice is also how
        // an existing one is changed (nats-server updates a durable created again), so a parent may not
        // (deploy/nats/accounts.conf). Its specs wait in the work queue until a daemon makes it.
        if (!isPermissionViolation(error) && !isAlreadyExists(error)) throw error;
      }
    }
    const kvm = new Kvm(js);
    // Registry reads go to the bucket's stream leader, not to any replica ("direct get"): a replica
    // may lag (a compare-and-set built on what it says fails, or an abort flag is missed), and on a
    // partition the servers keep routing direct gets to a cut node's replica, where each one timed out
    // (test/faults/minority-node.test.ts). The leader is always on the side that can write.
    const runs = await createOrOpen(() =>
      kvm.create(subjects.buckets.runs, {
        allow_direct: false,
        replicas: resolved.replicas,
        history: 1,
        ttl: resolved.runsTtlMs,
        max_bytes: resolved.runsMaxBytes,
        maxValueSize: MAX_EVENT_BYTES,
      }),
    );
    const daemons = await createOrOpen(() =>
      kvm.create(subjects.buckets.daemons, {
        allow_direct: false,
        replicas: resolved.replicas,
        history: 1,
        ttl: resolved.daemonTtlMs,
      }),
    );
    const prefixes = await createOrOpen(() =>
      new Objm(js).create(subjects.buckets.prefixes, {
        replicas: resolved.replicas,
        ttl: nanos(resolved.prefixesTtlMs),
        max_bytes: resolved.prefixesMaxBytes,
      }),
    );
    return {
      nc,
      js,
      jsm,
      subjects,
      runs,
      daemons,
      prefixes,
      options: resolved,
      specsOnePerRun: keepsOneSpecPerRun(specsConfig),
    };
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
