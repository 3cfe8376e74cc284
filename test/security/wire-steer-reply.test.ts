// A steering request is request/reply: the daemon running the run answers on the request's reply
// subject — published with the daemon's own rights, which include purging the run registry and the
// prefix store (its retention sweep) and publishing any run's events. A parent chose that subject
// freely: a steer request of any running run, no proof needed, with reply subject
// `$JS.API.STREAM.PURGE.KV_agent_fork_runs` emptied the registry of the whole account, and one with a
// run's events subject put the reply in that run's log. The daemon now answers only a parent's inbox
// and refuses a request that names anything else.
import { NatsForkSubagent } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { type ForkEvent, forkSubjects, PROTOCOL_VERSION, steerRequestCodec } from "@forkd/protocol";
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { useDeployedNats } from "../harness/deployed.js";

const subjects = forkSubjects("agent");
const deployed = useDeployedNats("wire-steer-reply");
const SLOW = "Write a short essay.\n@sim tps 40\n@sim text 300";

async function firstDelta(events: AsyncIterable<ForkEvent>): Promise<void> {
  for await (const event of events) if (event.type === "llm.delta") return;
}

describe("the reply subject of a steering request", () => {
  it("cannot make a daemon purge the registry or write into another run's log", async () => {
    await deployed().startDaemon("wire-steer-reply-daemon");
    const owner = await NatsForkSubagent.create(await deployed().connectAs("parent"));
    const steered = owner.fork({ prefix: null, directive: SLOW, parent: { agent_id: "victim" } });
    const bystander = owner.fork({ prefix: null, directive: SLOW, parent: { agent_id: "victim" } });
    await Promise.all([firstDelta(steered.events()), firstDelta(bystander.events())]);
    const admin = await jetstreamManager(await deployed().connectAs("admin"));
    const registryStream = `KV_${subjects.buckets.runs}`;
    const registryBefore = (await admin.streams.info(registryStream)).state.messages;
    expect(registryBefore).toBeGreaterThan(0);

    // Another parent's steering of a run it does not own, replies sent where it harms.
    const attacker = await deployed().connectAs("parent");
    const request = steerRequestCodec.encode({
      v: PROTOCOL_VERSION,
      run_id: steered.runId,
      steer_id: "forged-steer",
      text: "anything",
      requested_at: Date.now(),
    });
    for (const reply of [
      `$JS.API.STREAM.PURGE.${registryStream}`,
      `$JS.API.STREAM.PURGE.OBJ_${subjects.buckets.prefixes}`,
      subjects.events(bystander.runId),
    ])
      attacker.publish(subjects.steer(steered.runId), request, { reply });
    await attacker.flush();
    // The owner's own steering comes after them on the same subscription, and is answered.
    await steered.send("Mention the codec too.");

    expect((await bystander.result()).status).toBe("completed");
    expect((await steered.result()).status).toBe("completed");
    const log = (await readStoredEvents(owner.resources, bystander.runId)).map((stored) => stored.event);
    expect(log.map((event) => event.seq)).toEqual(log.map((_, index) => index + 1));
    expect((await admin.streams.info(registryStream)).state.messages).toBeGreaterThanOrEqual(registryBefore);
    const steeredLog = (await readStoredEvents(owner.resources, steered.runId)).map((stored) => stored.event);
    expect(steeredLog.filter((event) => event.type === "steered")).toHaveLength(1);
    await owner.close();
  });
});
