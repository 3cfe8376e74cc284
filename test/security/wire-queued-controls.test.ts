// Any parent may publish an abort for any run id, and one daemon of the queue group then tries to end
// that run where it waits in the work queue (queued-control.ts). To judge the proof it needs the
// spec's owner token, so it reads the stored spec — for a parent's inline prefix, hundreds of
// kilobytes — and parses it. A forged abort is a hundred bytes: read anew for each one, a flood of
// them made the daemon fetch and parse the same spec again and again, all at once, with no bound on
// the reads in flight. The owner a spec names does not change while it is stored, so a forged abort
// of a run whose owner was read moments ago is refused without reading it again. And the run's registry
// entry, which any parent may rewrite, no longer decides whether the owner's abort ends a queued run.
import { type NatsForkHandle, NatsForkSubagent } from "@forkd/client";
import { updateRunState } from "@forkd/client/internal";
import { createForkPrefix } from "@forkd/core";
import { abortRequestCodec, type ForkEvent, PROTOCOL_VERSION } from "@forkd/protocol";
import { loadFixture, waitFor } from "@forkd/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

// One slot: a slow run holds it, and the victim waits in the queue behind it.
const stack = useForkdStack({ daemonConfig: { concurrency: 1 } });
const FORGED_ABORTS = 300;
const BIG_SPECS = 80;

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

/** A slow run of the owner's in the daemon's one slot: what is forked next waits in the queue. */
async function holdTheSlot(): Promise<NatsForkHandle> {
  const holder = owner.fork({
    prefix: null,
    directive: "Hold the slot.\n@sim tps 20\n@sim text 4000",
    parent: { agent_id: "owner" },
  });
  await firstDelta(holder.events());
  return holder;
}

/** An abort of `runId` from another parent: no proof, or one made without the owner's token. */
function publishForgedAbort(runId: string, proof?: string): void {
  const { nc, forks } = stack();
  nc.publish(
    forks.resources.subjects.abort(runId),
    abortRequestCodec.encode({
      v: PROTOCOL_VERSION,
      run_id: runId,
      reason: "forged",
      requested_at: Date.now(),
      ...(proof === undefined ? {} : { proof }),
    }),
  );
}

/** The clients the server has cut off for not reading their messages fast enough. */
async function slowConsumers(): Promise<number> {
  const varz = await fetch(`${stack().server.monitorUrl}/varz`);
  return ((await varz.json()) as { slow_consumers: number }).slow_consumers;
}

describe("aborts of a queued run", () => {
  it("a flood of forged aborts reads the queued spec once, and the owner's abort still ends the run", async () => {
    const { nc, forks } = stack();
    const subjects = forks.resources.subjects;
    const holder = await holdTheSlot();

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
      publishForgedAbort(victim.runId, i % 2 === 0 ? undefined : i.toString(16).padStart(64, "0"));
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
    expect(await slowConsumers()).toBe(0);

    await owner.attach(holder.runId).abort("done");
    await holder.result();
    await waitFor(async () => (await owner.state(victim.runId))?.status === "aborted");
  });

  it("forged aborts of many large queued specs, one each, do not cut the daemon off", async () => {
    const holder = await holdTheSlot();

    // Each spec carries a prefix of ~900 KB inline: together more than the 64 MB the server holds
    // for one client before it cuts it off.
    const fixture = await loadFixture("4k");
    const request = fixture.request as { system?: unknown };
    const big = createForkPrefix(
      { ...fixture.request, system: `${String(request.system)}${"x".repeat(900_000)}` },
      fixture.response,
    );
    const victims = [];
    for (let i = 0; i < BIG_SPECS; i++) {
      const victim = owner.fork({
        prefix: big,
        directive: `Wait in the queue ${i}.`,
        parent: { agent_id: "owner" },
      });
      await victim.published();
      victims.push(victim);
    }
    for (const victim of victims) {
      publishForgedAbort(victim.runId);
    }
    await stack().nc.flush();
    const last = victims[victims.length - 1]!;
    await owner.attach(last.runId).abort("the owner ends it");
    expect(await last.result()).toMatchObject({ status: "killed", reason: "the owner ends it" });
    expect(await slowConsumers()).toBe(0);

    await Promise.all([...victims, holder].map((handle) => owner.attach(handle.runId).abort("done")));
    await Promise.all([...victims, holder].map((handle) => handle.result()));
  });

  it("the owner's abort ends a queued run whose entry another parent rewrote, its forged aborts heard first", async () => {
    const attacker = stack().forks;
    const holder = await holdTheSlot();
    const victim = owner.fork({
      prefix: null,
      directive: "Wait in the queue.",
      parent: { agent_id: "owner" },
    });
    await victim.published();
    expect((await owner.state(victim.runId))?.status).toBe("queued");
    // The entry says running (any parent may write it), and forged aborts fill what every daemon
    // remembers of the run's controls until it starts.
    await updateRunState(attacker.resources, victim.runId, (state) => ({ ...state!, status: "running" }));
    for (let i = 0; i < 4; i++) publishForgedAbort(victim.runId);
    await owner.attach(victim.runId).abort("the owner ends it");
    // The flag the owner wrote is erased, and the entry still says running.
    await updateRunState(attacker.resources, victim.runId, (state) => {
      const { abort: _erased, ...rest } = state!;
      return { ...rest, status: "running" };
    });
    await owner.attach(holder.runId).abort("done");
    expect(await victim.result()).toMatchObject({ status: "killed", reason: "the owner ends it" });
  });
});
