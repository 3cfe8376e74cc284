// The roles of deploy/nats/accounts.conf, used for real: a nats-server runs with that file's
// accounts, users and permissions (passwords from the environment, as deployed), and each role
// connects with the v3 client and does what forkd does — through @forkd/client where it exists —
// then tries what it must not do.
import {
  awaitTerminalEvent,
  ensureForkResources,
  type ForkResources,
  readEventLog,
  serveTools,
} from "@forkd/client";
import {
  DAEMON_INBOX_PREFIX,
  emptyUsageTotals,
  eventMsgId,
  type ForkEvent,
  forkEventCodec,
  forkSubjects,
  PROTOCOL_VERSION,
} from "@forkd/protocol";
import { toolHostCallProof } from "@forkd/protocol/internal";
import { type NatsServerHandle, startNatsCluster, startNatsServer } from "@forkd/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import {
  connect,
  type NatsConnection,
  PermissionViolationError,
  type Subscription,
} from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { passwordEnv, type Role, readRepoFile, TEST_PASSWORDS } from "./support.js";

const subjects = forkSubjects("agent");
const accounts = readRepoFile("deploy/nats/accounts.conf");
const encoder = new TextEncoder();
const PREFIX_BYTES = 8_000_000;

// nats-server reads `$FORKD_*_PASSWORD` from its environment; the harness spawns it with ours.
const savedEnv = new Map<string, string | undefined>();
function setPasswordEnv(): void {
  for (const [name, value] of Object.entries(passwordEnv())) {
    savedEnv.set(name, process.env[name]);
    process.env[name] = value;
  }
}
function restorePasswordEnv(): void {
  for (const [name, value] of savedEnv) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}

const connections: NatsConnection[] = [];
async function connectAs(url: string, role: Role): Promise<NatsConnection> {
  const nc = await connect({
    servers: url,
    user: role,
    pass: TEST_PASSWORDS[role],
    name: `deploy-test-${role}`,
    reconnect: false,
    // A daemon's replies and deliveries come on inboxes only daemons may read, as in forkd's daemon.
    ...(role === "daemon" ? { inboxPrefix: DAEMON_INBOX_PREFIX } : {}),
  });
  connections.push(nc);
  return nc;
}

/** Collects the permission violations the server reports on a connection (they arrive asynchronously). */
class PermissionErrors {
  readonly seen: PermissionViolationError[] = [];
  #waiters: {
    match: (e: PermissionViolationError) => boolean;
    resolve: (e: PermissionViolationError) => void;
  }[] = [];

  constructor(nc: NatsConnection) {
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type !== "error" || !(status.error instanceof PermissionViolationError)) continue;
        const error = status.error;
        this.seen.push(error);
        for (const waiter of this.#waiters.splice(0)) {
          if (waiter.match(error)) waiter.resolve(error);
          else this.#waiters.push(waiter);
        }
      }
    })();
  }

  /** The first violation (seen or to come) for `operation` on `subject`. */
  next(operation: "publish" | "subscription", subject: string): Promise<PermissionViolationError> {
    const match = (e: PermissionViolationError) => e.operation === operation && e.subject === subject;
    const found = this.seen.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => this.#waiters.push({ match, resolve }));
  }
}

function event(runId: string, seq: number, body: Record<string, unknown>): ForkEvent {
  return forkEventCodec.decode(
    encoder.encode(
      JSON.stringify({ v: PROTOCOL_VERSION, run_id: runId, seq, attempt: 1, ts: Date.now(), ...body }),
    ),
  );
}

async function publishEvent(resources: ForkResources, value: ForkEvent): Promise<void> {
  await resources.js.publish(subjects.events(value.run_id), forkEventCodec.encode(value), {
    msgID: eventMsgId(value.run_id, value.seq),
  });
}

/** The next message of a subscription, or a timeout error. */
async function nextMessage(sub: Subscription, timeoutMs = 5_000): Promise<{ subject: string; data: string }> {
  const timer = setTimeout(() => sub.unsubscribe(), timeoutMs);
  try {
    for await (const message of sub) return { subject: message.subject, data: message.string() };
    throw new Error(`no message on ${sub.getSubject()} within ${timeoutMs} ms`);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(setPasswordEnv);
afterAll(async () => {
  await Promise.allSettled(connections.map((nc) => nc.close()));
  restorePasswordEnv();
});

describe("deploy/nats/accounts.conf on one node", () => {
  let server: NatsServerHandle;
  let parent: ForkResources;
  let daemon: ForkResources;
  let observer: ForkResources;
  let parentErrors: PermissionErrors;
  let daemonErrors: PermissionErrors;
  let observerErrors: PermissionErrors;

  beforeAll(async () => {
    server = await startNatsServer({ name: "deploy-accounts", config: accounts });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("lets every role in with its password, and nobody without one", async () => {
    for (const role of ["parent", "daemon", "observer", "admin"] as const) {
      const nc = await connectAs(server.url, role);
      await nc.flush();
    }
    const sys = await connectAs(server.url, "sys");
    const varz = await sys.request("$SYS.REQ.SERVER.PING.VARZ", "", { timeout: 5_000 });
    expect(varz.json<{ data: { server_name: string } }>().data.server_name).toBe("deploy-accounts");
    await expect(
      connect({ servers: server.url, user: "daemon", pass: "wrong", reconnect: false }),
    ).rejects.toThrow(/Authorization/i);
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/Authorization/i);
  });

  it("parent: creates forkd's resources, uploads a prefix, registers and submits a run, aborts it", async () => {
    const nc = await connectAs(server.url, "parent");
    parentErrors = new PermissionErrors(nc);
    parent = await ensureForkResources(nc);
    expect(parent.options.replicas).toBe(1);

    // Big enough that reading it back needs flow-control replies ($JS.FC.…).
    await parent.prefixes.putBlob({ name: "prefix-1" }, new Uint8Array(PREFIX_BYTES).fill(7));
    expect((await parent.prefixes.info("prefix-1"))?.size).toBe(PREFIX_BYTES);

    await parent.runs.create("run-1", encoder.encode('{"status":"queued"}'));
    const entry = await parent.runs.get("run-1");
    await parent.runs.update("run-1", encoder.encode('{"status":"queued","label":"x"}'), entry!.revision);

    const ack = await parent.js.publish(subjects.spec("run-1"), encoder.encode('{"spec":"run-1"}'), {
      msgID: "run-1",
    });
    expect(ack.stream).toBe(subjects.streams.specs);

    parent.nc.publish(subjects.abort("run-1"), encoder.encode('{"abort":"run-1"}'));
    await parent.nc.flush();
    // The one refusal: the daemons' consumer, which no daemon had made yet, is not the parent's to make.
    expect(parentErrors.seen.map((error) => error.subject)).toEqual([
      `$JS.API.CONSUMER.CREATE.${subjects.streams.specs}.${subjects.specsConsumer}`,
    ]);
    parentErrors.seen.splice(0); // the tests below expect no other
  });

  it("daemon: opens the resources, pulls the spec, keeps the claim, writes the registries, publishes events", async () => {
    const nc = await connectAs(server.url, "daemon");
    daemonErrors = new PermissionErrors(nc);
    // The daemons' consumer is the daemon's to create (the parent may not); max_deliver 2 for the
    // max-deliveries test below.
    daemon = await ensureForkResources(nc, { maxDeliver: 2 });
    const consumer = await daemon.js.consumers.get(subjects.streams.specs, subjects.specsConsumer);
    const batch = await consumer.fetch({ max_messages: 1, expires: 5_000 });
    let spec: Awaited<ReturnType<typeof consumer.next>> = null;
    for await (const message of batch) spec = message;
    expect(spec?.subject).toBe(subjects.spec("run-1"));
    spec!.working();

    const run = await daemon.runs.get("run-1");
    await daemon.runs.update("run-1", encoder.encode('{"status":"running","attempt":1}'), run!.revision);
    // It keeps a group's spend, which parents may not write.
    await expect(daemon.runs.put("spend.group-1", encoder.encode("{}"))).resolves.toBeGreaterThan(0);
    await daemon.runs.purge("spend.group-1");
    await daemon.daemons.put("daemon-1", encoder.encode('{"daemon_id":"daemon-1"}'));
    expect((await daemon.daemons.get("daemon-1"))?.string()).toBe('{"daemon_id":"daemon-1"}');
    expect((await daemon.prefixes.getBlob("prefix-1"))?.byteLength).toBe(PREFIX_BYTES);

    await publishEvent(
      daemon,
      event("run-1", 1, {
        type: "accepted",
        daemon_id: "daemon-1",
        queue_wait_ms: 1,
        delivery: 1,
        resumed: false,
      }),
    );
    // A warm-first follower's daemon hears its cache leader's events on core NATS (cache-leader.ts).
    const leaderEvents = daemon.nc.subscribe(subjects.events("run-1"), { max: 1 });
    await daemon.nc.flush();
    await publishEvent(daemon, event("run-1", 2, { type: "heartbeat", daemon_id: "daemon-1", turn: 0 }));
    for await (const heard of leaderEvents) expect(heard.json<{ seq: number }>().seq).toBe(2);
    // A daemon resuming a run reads its log: the last event and an ordered replay.
    const replay: number[] = [];
    for await (const logged of readEventLog(daemon, "run-1", { follow: false }))
      replay.push(logged.event.seq);
    expect(replay).toEqual([1, 2]);

    // The call limits: a daemon writes their entries and watches them (a freed slot wakes waiters).
    const limitWatch = await daemon.daemons.watch({ key: "limit.key.k1", include: "updates" });
    await daemon.daemons.put("limit.key.k1", encoder.encode('{"v":1,"holders":[],"waiters":[]}'));
    for await (const update of limitWatch) {
      expect(update.key).toBe("limit.key.k1");
      break;
    }
    await daemon.daemons.delete("limit.key.k1");

    expect(await spec!.ackAck()).toBe(true);
    await daemon.daemons.delete("daemon-1");
    await nc.flush();
    expect(daemonErrors.seen).toEqual([]);
  });

  it("parent and daemon: the parent follows events, aborts reach daemons, requests are answered", async () => {
    const events: string[] = [];
    for await (const logged of readEventLog(parent, "run-1", { follow: false }))
      events.push(logged.event.type);
    expect(events).toEqual(["accepted", "heartbeat"]);
    // `forkd ps` with the parent's credentials: both registries listed.
    const runs: string[] = [];
    for await (const key of await parent.runs.keys()) runs.push(key);
    expect(runs).toEqual(["run-1"]);
    for await (const key of await parent.daemons.keys()) expect(key).toBe("never: daemon-1 removed itself");

    const aborts = daemon.nc.subscribe(subjects.allAborts, { max: 1 });
    await daemon.nc.flush();
    parent.nc.publish(subjects.abort("run-2"), encoder.encode("stop"));
    expect(await nextMessage(aborts)).toEqual({ subject: subjects.abort("run-2"), data: "stop" });

    // The parent answers with allow_responses: it has no publish right on _INBOX.> at all.
    const permissions = parent.nc.subscribe(subjects.allPermissions, {
      callback: (_error, message) => {
        message.respond(encoder.encode(`allow ${message.subject}`));
      },
    });
    const tools = serveTools(parent.nc, {
      hostId: "host-1",
      tools: { Echo: (input) => JSON.stringify(input) },
    });
    await parent.nc.flush();
    const answer = await daemon.nc.request(subjects.permission("run-2"), "may I?", { timeout: 5_000 });
    expect(answer.string()).toBe(`allow ${subjects.permission("run-2")}`);
    // A daemon's call carries the proof of the host's reply key, as the run's spec gives it.
    const call = {
      v: PROTOCOL_VERSION,
      run_id: "run-2",
      tool_use_id: "toolu_1",
      name: "Echo",
      input: { a: 1 },
    };
    const toolReply = await daemon.nc.request(
      subjects.toolHost("host-1"),
      JSON.stringify({ ...call, proof: toolHostCallProof(tools.ref.reply_key!, call) }),
      { timeout: 5_000 },
    );
    expect(toolReply.json<{ content: string }>().content).toContain('"a":1');
    permissions.unsubscribe();
    await tools.stop();
    // Steering: the parent asks, the daemon running the run answers through allow_responses.
    const steering = daemon.nc.subscribe(subjects.allSteers, {
      callback: (_error, message) => {
        message.respond(encoder.encode(`taken ${message.subject}`));
      },
    });
    await daemon.nc.flush();
    const taken = await parent.nc.request(subjects.steer("run-2"), "look here", { timeout: 5_000 });
    expect(taken.string()).toBe(`taken ${subjects.steer("run-2")}`);
    steering.unsubscribe();
    // result() and cascades hear a run's events on core NATS (a JetStream publish reaches plain
    // subscribers), then confirm the ending with a read of the stored last event.
    const heard = parent.nc.subscribe(subjects.events("run-heard"), { max: 1 });
    await parent.nc.flush();
    const ending = event("run-heard", 1, { type: "aborted", reason: "heard", usage: emptyUsageTotals() });
    await publishEvent(daemon, ending);
    expect(JSON.parse((await nextMessage(heard)).data)).toMatchObject({ type: "aborted", seq: 1 });
    expect((await awaitTerminalEvent(parent, "run-heard")).event).toEqual(ending);
    expect(parentErrors.seen).toEqual([]);
    expect(daemonErrors.seen).toEqual([]);
  });

  it("observer: reads the event log and the registries", async () => {
    const nc = await connectAs(server.url, "observer");
    observerErrors = new PermissionErrors(nc);
    // Opening only: every resource exists, so ensureForkResources creates nothing.
    observer = await ensureForkResources(nc);
    const seqs: number[] = [];
    for await (const logged of readEventLog(observer, "run-1", { follow: false }))
      seqs.push(logged.event.seq);
    expect(seqs).toEqual([1, 2]);
    expect(new TextDecoder().decode((await observer.runs.get("run-1"))!.value)).toContain("running");
    const keys: string[] = [];
    for await (const key of await observer.runs.keys()) keys.push(key);
    expect(keys).toEqual(["run-1"]);
    const daemons: string[] = [];
    for await (const key of await observer.daemons.keys()) daemons.push(key);
    expect(daemons).toEqual([]); // daemon-1 deleted its entry when it was done
    const info = await observer.jsm.consumers.info(subjects.streams.specs, subjects.specsConsumer);
    expect(info.num_pending).toBe(0);
  });

  it("daemon: must not submit or abort work, nor read specs off the wire, nor make its own consumer", async () => {
    const admin = await jetstreamManager(await connectAs(server.url, "admin"));
    const before = (await admin.streams.info(subjects.streams.specs)).state.messages;

    daemon.nc.publish(subjects.spec("forged"), "forged spec");
    expect((await daemonErrors.next("publish", subjects.spec("forged"))).message).toMatch(
      /Permissions Violation/,
    );
    await expect(daemon.js.publish(subjects.spec("forged-js"), "forged spec")).rejects.toThrow(
      /Permissions Violation for Publish to "agent\.fork\.forged-js"/,
    );
    daemon.nc.publish(subjects.abort("run-1"), "forged abort");
    await daemonErrors.next("publish", subjects.abort("run-1"));
    daemon.nc.publish(subjects.steer("run-1"), "forged steering");
    await daemonErrors.next("publish", subjects.steer("run-1"));
    expect((await admin.streams.info(subjects.streams.specs)).state.messages).toBe(before);

    const sniff = daemon.nc.subscribe(subjects.allSpecs);
    await daemonErrors.next("subscription", subjects.allSpecs);
    await sniff.closed;

    await expect(daemon.jsm.consumers.add(subjects.streams.specs, { durable_name: "thief" })).rejects.toThrow(
      /Permissions Violation/,
    );
    await expect(daemon.prefixes.putBlob({ name: "forged" }, new Uint8Array(10))).rejects.toThrow(
      /Permissions Violation/,
    );
    await expect(daemon.jsm.streams.delete(subjects.streams.events)).rejects.toThrow(/Permissions Violation/);
  });

  it("parent: must not forge events or daemon entries", async () => {
    parent.nc.publish(subjects.events("run-1"), "forged event");
    await parentErrors.next("publish", subjects.events("run-1"));
    await expect(parent.daemons.put("daemon-x", "forged")).rejects.toThrow(/Permissions Violation/);
    // A group's spend is the daemons' count, in the runs bucket the parent otherwise writes.
    await expect(parent.runs.put("spend.group-1", "{}")).rejects.toThrow(
      /Permissions Violation for Publish to "\$KV\.agent_fork_runs\.spend\.group-1"/,
    );
    await expect(parent.runs.delete("spend.group-1")).rejects.toThrow(/Permissions Violation/);
    await expect(parent.runs.put("budget.group-1", "{}")).resolves.toBeGreaterThan(0);
    await parent.runs.purge("budget.group-1");
    // Nor a call limit's entry: a parent cannot free slots, raise the limit or jump the queue.
    await expect(parent.daemons.put("limit.key.k1", "forged")).rejects.toThrow(/Permissions Violation/);
    await expect(parent.daemons.delete("limit.model.m")).rejects.toThrow(/Permissions Violation/);
    await expect(parent.jsm.streams.delete(subjects.streams.specs)).rejects.toThrow(/Permissions Violation/);
  });

  it("observer: must not abort, submit, or write the registries", async () => {
    observer.nc.publish(subjects.abort("run-1"), "abort from an observer");
    const violation = await observerErrors.next("publish", subjects.abort("run-1"));
    expect(violation.message).toMatch(/Permissions Violation for Publish to "agent\.fork\.run-1\.abort"/);
    await expect(observer.js.publish(subjects.spec("run-3"), "spec")).rejects.toThrow(
      /Permissions Violation/,
    );
    await expect(observer.runs.put("run-1", "overwritten")).rejects.toThrow(
      /Permissions Violation for Publish to "\$KV\.agent_fork_runs\.run-1"/,
    );
    await expect(observer.daemons.delete("daemon-1")).rejects.toThrow(/Permissions Violation/);
    await expect(observer.prefixes.putBlob({ name: "p" }, new Uint8Array(1))).rejects.toThrow(
      /Permissions Violation/,
    );
    await expect(observer.jsm.streams.purge(subjects.streams.events)).rejects.toThrow(
      /Permissions Violation/,
    );
    observer.nc.publish(subjects.steer("run-1"), "steering from an observer");
    await observerErrors.next("publish", subjects.steer("run-1"));
    const steersSeen = observer.nc.subscribe(subjects.allSteers);
    await observerErrors.next("subscription", subjects.allSteers);
    await steersSeen.closed;
    const abortsSeen = observer.nc.subscribe(subjects.allAborts);
    await observerErrors.next("subscription", subjects.allAborts);
    await abortsSeen.closed;
    // The registry is unchanged.
    expect(new TextDecoder().decode((await observer.runs.get("run-1"))!.value)).toContain("running");
  });

  it("daemon: fails a spec that exhausted max_deliver (advisory, message get and delete)", async () => {
    const violationsBefore = daemonErrors.seen.length;
    const advisory = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${subjects.streams.specs}.${subjects.specsConsumer}`;
    const advisories = daemon.nc.subscribe(advisory, {
      queue: `${subjects.specsConsumer}_advisories`,
      max: 1,
    });
    await daemon.nc.flush();
    await parent.js.publish(subjects.spec("run-dead"), encoder.encode('{"spec":"run-dead"}'));
    const consumer = await daemon.js.consumers.get(subjects.streams.specs, subjects.specsConsumer);
    // max_deliver is 2 (set by the daemon above): two deliveries, both nak'ed, and the next pull
    // finds the spec exhausted.
    for (let delivery = 1; delivery <= 3; delivery++) {
      const batch = await consumer.fetch({ max_messages: 1, expires: 1_000 });
      for await (const message of batch) {
        expect(message.info.deliveryCount).toBe(delivery);
        message.nak();
      }
    }
    const { data } = await nextMessage(advisories);
    const streamSeq = (JSON.parse(data) as { stream_seq: number }).stream_seq;
    const stored = await daemon.jsm.streams.getMessage(subjects.streams.specs, { seq: streamSeq });
    expect(stored?.subject).toBe(subjects.spec("run-dead"));
    expect(await daemon.jsm.streams.deleteMessage(subjects.streams.specs, streamSeq)).toBe(true);
    expect(daemonErrors.seen.slice(violationsBefore)).toEqual([]);
  });
});

describe("deploy/nats/accounts.conf: who may create the resources", () => {
  it("a daemon that starts first creates them; an observer cannot", async () => {
    await using server = await startNatsServer({ name: "deploy-bootstrap", config: accounts });
    const observer = await connectAs(server.url, "observer");
    await expect(ensureForkResources(observer)).rejects.toThrow(/Permissions Violation/);
    await ensureForkResources(await connectAs(server.url, "daemon"));
    const admin = await jetstreamManager(await connectAs(server.url, "admin"));
    const names: string[] = [];
    for await (const name of admin.streams.names()) names.push(name);
    expect(names.sort()).toEqual(
      [
        subjects.streams.events,
        subjects.streams.specs,
        `KV_${subjects.buckets.daemons}`,
        `KV_${subjects.buckets.runs}`,
        `OBJ_${subjects.buckets.prefixes}`,
      ].sort(),
    );
    // …and a parent arriving later only opens them.
    const parent = await ensureForkResources(await connectAs(server.url, "parent"));
    expect((await parent.js.publish(subjects.spec("r1"), "{}")).seq).toBe(1);
  });

  it("on a three-node cluster the same accounts create R3 resources", async () => {
    await using cluster = await startNatsCluster({ name: "deploy-cluster", config: accounts });
    const nc = await connectAs(cluster.nodes[1]!.url, "parent");
    const resources = await ensureForkResources(nc);
    expect(resources.options.replicas).toBe(3);
    const info = await resources.jsm.streams.info(subjects.streams.specs);
    expect(info.config.num_replicas).toBe(3);
    expect((await resources.js.publish(subjects.spec("r1"), "{}")).stream).toBe(subjects.streams.specs);
    const daemon = await ensureForkResources(await connectAs(cluster.nodes[2]!.url, "daemon"));
    const consumer = await daemon.js.consumers.get(subjects.streams.specs, subjects.specsConsumer);
    const message = await consumer.next({ expires: 5_000 });
    expect(message?.subject).toBe(subjects.spec("r1"));
    expect(await message!.ackAck()).toBe(true);
    const js = jetstream(await connectAs(cluster.nodes[0]!.url, "observer"));
    await expect(js.publish(subjects.spec("r2"), "{}")).rejects.toThrow(/Permissions Violation/);
  });
});
