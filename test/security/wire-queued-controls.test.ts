// Any parent may publish an abort for any run id, and one daemon of the queue group then tries to end
// that run where it waits in the work queue (queued-control.ts). To judge the proof it needs the
// spec's owner token, so it reads the stored spec — for a parent's inline prefix, hundreds of
// kilobytes — and parses it. A forged abort is a hundred bytes: read anew for each one, a flood of
// them made the daemon fetch and parse the same spec again and again, all at once, with no bound on
// the reads in flight. The owner a spec names does not change while it is stored, so a forged abort
// of a run whose owner was read moments ago is refused without reading it again.
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { abortRequestCodec, type ForkEvent, PROTOCOL_VERSION } from "@forkd/protocol";
import { loadFixture, waitFor } from "@forkd/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

// One slot: a slow run holds it, and the victim waits in the queue behind it.
const stack = useForkdStack({ daemonConfig: { concurrency: 1 } });
const FORGED_ABORTS = 300;

let owner: NatsForkSubagent;

beforeAll(async () => {
  owner = await NatsForkSubagent.create(stack().nc, { prefixTransport: "inline" });
});

afterAll(async () => {
  await owner?.close();
});

async function firstDelta(events: AsyncIterable<ForkEvent>): Promise<void> {
  for await (const event of events) if (event.type === "llm.delta") return;
}

describe("aborts of a queued run", () => {
  it("a flood of forged aborts reads the queued spec once, and the owner's abort still ends the run", async () => {
    const { nc, forks } = stack();
    const subjects = forks.resources.subjects;
    const holder = owner.fork({
      prefix: null,
      directive: "Hold the slot.\n@sim tps 20\n@sim text 4000",
      parent: { agent_id: "owner" },
    });
    await firstDelta(holder.events());

    const fixture = await loadFixture("48k");
    const victim = owner.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "Wait in the queue.",
      parent: { agent_id: "owner" },
    });
    await victim.published();
    expect((await owner.state(victim.runId))?.status).toBe("queued");

    // Every read of the victim's stored spec, as the daemon asks the server for it.
    let specReads = 0;
    const victimSpec = subjects.spec(victim.runId);
    const reads = nc.subscribe(`$JS.API.STREAM.MSG.GET.${subjects.streams.specs}`, {
      callback: (_error, message) => {
        if (message.string().includes(victimSpec)) specReads++;
      },
    });
    await nc.flush();

    for (let i = 0; i < FORGED_ABORTS; i++) {
      nc.publish(
        subjects.abort(victim.runId),
        abortRequestCodec.encode({
          v: PROTOCOL_VERSION,
          run_id: victim.runId,
          reason: "forged",
          requested_at: Date.now(),
          ...(i % 2 === 0 ? {} : { proof: i.toString(16).padStart(64, "0") }),
        }),
      );
    }
    await nc.flush();
    // The owner's abort comes after every forged one on the same subject, to the same daemon.
    await owner.attach(victim.runId).abort("the owner ends it");
    expect(await victim.result()).toMatchObject({ status: "killed", reason: "the owner ends it" });
    await nc.flush();
    reads.unsubscribe();
    // The first forged abort's read, which the others wait for, and the owner's own.
    expect(specReads).toBeLessThanOrEqual(2);
    // Read for each forged abort, the copies came faster than the daemon took them, and the server
    // cut it off as a slow consumer.
    const varz = (await (await fetch(`${stack().server.monitorUrl}/varz`)).json()) as {
      slow_consumers: number;
    };
    expect(varz.slow_consumers).toBe(0);

    await owner.attach(holder.runId).abort("done");
    await holder.result();
    await waitFor(async () => (await owner.state(victim.runId))?.status === "aborted");
  });
});
