// The floor under forkd's dispatch on this machine: what "stored, then claimed" costs in raw
// JetStream, with no forkd code at all. A publisher stores a small message in a work-queue stream,
// a pull consumer on another connection receives it and creates a KV entry (a claim), and the clock
// runs from the publish call to the create's acknowledgement. forkd's dispatch makes these round
// trips and nothing cheaper can: the spec must be stored before a daemon takes it, and the claim
// must be stored before the run does anything visible.
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { now, type Summary, summarize } from "./stats.js";

/** Medians and tails of the raw round trips, one message at a time. */
export interface NatsFloor {
  /** Publish call → the pull consumer holds the message (one trip through the server). @unit ms */
  delivered: Summary;
  /**
   * Publish call → a core subscription on the consumer's connection holds the same message: what the
   * server hands over as it reads it, before the store. @unit ms
   */
  coreDelivered: Summary;
  /**
   * The pull consumer's time after the core subscription's, message by message: the most that a spec
   * delivered without JetStream (a core offer to a daemon) could gain on this hop. @unit ms
   */
  pullAfterCore: Summary;
  /** Publish call → the publisher has its ack. @unit ms */
  publishAcked: Summary;
  /** Publish call → the consumer's KV create is acknowledged: stored, then claimed. @unit ms */
  claimed: Summary;
}

/**
 * Measures {@link NatsFloor} against the nats-server at `url`, `count` messages after `warmup`,
 * each sent after the previous one's claim: the same one-at-a-time pattern as benchmark #2.
 */
export async function measureNatsFloor(url: string, count: number, warmup: number): Promise<NatsFloor> {
  const publisher = await connect({ servers: url, name: "bench-floor-publisher", noAsyncTraces: true });
  const claimer = await connect({ servers: url, name: "bench-floor-claimer", noAsyncTraces: true });
  const stream = "BENCH_FLOOR";
  const jsm = await jetstreamManager(publisher);
  try {
    await jsm.streams.add({
      name: stream,
      subjects: ["bench.floor.>"],
      retention: RetentionPolicy.Workqueue,
    });
    await jsm.consumers.add(stream, { durable_name: "claimer", ack_policy: AckPolicy.Explicit });
    const kv = await new Kvm(claimer).create("bench_floor", { history: 1 });
    const consumer = await jetstream(claimer).consumers.get(stream, "claimer");
    const messages = await consumer.consume({ max_messages: 64 });
    // The same messages as a core subscriber sees them: the server delivers a publish to its
    // subscriptions and to the stream alike.
    let onCore: ((at: number) => void) | undefined;
    const core = claimer.subscribe("bench.floor.>", { callback: () => onCore?.(now()) });
    await claimer.flush();
    const js = jetstream(publisher);
    const delivered: number[] = [];
    const coreDelivered: number[] = [];
    const pullAfterCore: number[] = [];
    const publishAcked: number[] = [];
    const claimed: number[] = [];
    const iterator = messages[Symbol.asyncIterator]();
    for (let i = 0; i < warmup + count; i++) {
      const coreAt = new Promise<number>((resolve) => {
        onCore = resolve;
      });
      const started = now();
      const acked = js.publish(`bench.floor.${i}`, new Uint8Array(300), { msgID: `floor-${i}` }).then(now);
      const next = await iterator.next();
      if (next.done) throw new Error("the floor's consumer stopped");
      const at = now();
      await kv.create(`run-${i}`, new Uint8Array(200));
      const end = now();
      next.value.ack();
      const ackedAt = await acked;
      const heardAt = await coreAt;
      if (i < warmup) continue;
      delivered.push(at - started);
      coreDelivered.push(heardAt - started);
      pullAfterCore.push(at - heardAt);
      publishAcked.push(ackedAt - started);
      claimed.push(end - started);
    }
    messages.stop();
    core.unsubscribe();
    return {
      delivered: summarize(delivered),
      coreDelivered: summarize(coreDelivered),
      pullAfterCore: summarize(pullAfterCore, 3),
      publishAcked: summarize(publishAcked),
      claimed: summarize(claimed),
    };
  } finally {
    await jsm.streams.delete(stream).catch(() => false);
    await publisher.close();
    await claimer.close();
  }
}
