// What parents and observers see across the cluster: a late observer replays a finished run
// completely, the 300k-token fixture (over NATS's 1 MB max_payload) forks through the object
// store, and a tool that exists only where the parent runs is served to the remote fork over NATS.
import { NatsForkSubagent, serveTools } from "@forkd/client";
import { encodeStoredPrefix, readPrefixMeta, readStoredEvents } from "@forkd/client/internal";
import { createForkPrefix } from "@forkd/core";
import { type ForkEvent, forkSpecCodec } from "@forkd/protocol";
import { loadFixture, waitFor } from "@forkd/testing";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";
import { prefixWithParentTool } from "../harness/prefixes.js";

const stack = useForkdStack({ daemons: ["obs-a"] });

async function collect(events: AsyncIterable<ForkEvent>): Promise<ForkEvent[]> {
  const all: ForkEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe("observers", () => {
  it("a late observer on another connection replays a finished run completely", async () => {
    const { forks, server } = stack();
    const fixture = await loadFixture("4k");
    const handle = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: 'Look around.\n@sim tool Glob {"pattern":"**/*"}\n@sim turn\n@sim text 50',
      parent: { agent_id: "parent-observed" },
    });
    const live = await collect(handle.events());
    expect(live.at(-1)?.type).toBe("completed");

    const observerConnection = await connect({ servers: server.url });
    try {
      const observer = await NatsForkSubagent.create(observerConnection);
      const replayed = await collect(observer.attach(handle.runId).events());
      expect(replayed).toEqual(live);
      expect(replayed.map((event) => event.seq)).toEqual(replayed.map((_, index) => index + 1));
      expect(await observer.attach(handle.runId).result()).toMatchObject({ status: "completed" });
      await observer.close();
    } finally {
      await observerConnection.close();
    }
  });
});

describe("prefixes through the object store", () => {
  it("forks the 300k-token fixture, whose prefix is larger than max_payload", async () => {
    const { forks, nc, sim } = stack();
    const fixture = await loadFixture("300k");
    const prefix = createForkPrefix(fixture.request, fixture.response, { betas: fixture.betas ?? [] });
    const maxPayload = nc.info!.max_payload;
    expect(JSON.stringify(prefix).length).toBeGreaterThan(maxPayload);

    const published: { bytes: number; prefixKind: string }[] = [];
    const spy = nc.subscribe(forks.resources.subjects.allSpecs, {
      callback: (_error, message) => {
        const spec = forkSpecCodec.decode(message.data);
        published.push({ bytes: message.data.byteLength, prefixKind: spec.prefix.kind });
      },
    });
    const handles = forks.fanOut({ prefix, parent: { agent_id: "parent-300k" } }, [
      { directive: "Child one of the big parent." },
      { directive: "Child two of the big parent." },
    ]);
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    spy.unsubscribe();
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["completed", "completed"]);
    expect(published).toHaveLength(2);
    for (const spec of published) {
      expect(spec.prefixKind).toBe("ref");
      expect(spec.bytes).toBeLessThan(4_096);
    }
    const objects: string[] = [];
    for await (const info of await forks.resources.prefixes.list()) objects.push(info.name);
    expect(objects).toHaveLength(1);
    // The children's requests carried the whole inherited conversation.
    const last = sim.requests().at(-1)!;
    expect(
      last.usage!.input_tokens +
        last.usage!.cache_read_input_tokens! +
        last.usage!.cache_creation_input_tokens!,
    ).toBeGreaterThan(250_000);
  });
});

describe("tool hosts", () => {
  it("a remote fork calls a tool that only the parent serves", async () => {
    const { forks, nc } = stack();
    const calls: unknown[] = [];
    const host = serveTools(nc, {
      hostId: "parent-host-1",
      tools: {
        ParentNotes: (input) => {
          calls.push(input);
          return "notes from the parent: remember the codec";
        },
      },
    });
    const hosted = await NatsForkSubagent.create(nc, { toolHost: host.ref });
    try {
      const handle = hosted.fork({
        prefix: await prefixWithParentTool("4k", "ParentNotes"),
        directive: 'Ask the parent.\n@sim tool ParentNotes {"topic":"codec"}',
        parent: { agent_id: "parent-with-tools" },
      });
      expect((await handle.result()).status).toBe("completed");
      expect(calls).toEqual([{ topic: "codec" }]);
      const events = (await readStoredEvents(forks.resources, handle.runId)).map((logged) => logged.event);
      const result = events.find((event) => event.type === "tool.result");
      expect(result).toMatchObject({
        name: "ParentNotes",
        is_error: false,
        content: "notes from the parent: remember the codec",
      });
    } finally {
      await hosted.close();
      await host.stop();
    }
  });

  it("sends a small prefix inline until it is forked again, then stores it and refers to it, the children's requests alike", async () => {
    const { forks, nc, sim } = stack();
    // A 4k parent no other test forks (a prefix is recognised by its hash).
    const prefix = await prefixWithParentTool("4k", "SiblingNotes");
    const { ref } = encodeStoredPrefix(prefix);
    const parentMessages = (prefix.params as { messages: unknown[] }).messages.length;
    const parent = { agent_id: "parent-small-siblings" };
    const kinds: string[] = [];
    const spy = nc.subscribe(forks.resources.subjects.allSpecs, {
      callback: (_error, message) => {
        const spec = forkSpecCodec.decode(message.data);
        if (spec.parent.agent_id === parent.agent_id) kinds.push(spec.prefix.kind);
      },
    });
    const forkOnce = async (directive: string) => {
      const outcome = await forks.fork({ prefix, directive, parent }).result();
      expect(outcome.status).toBe("completed");
      return sim.requests().at(-1)!;
    };
    try {
      const first = await forkOnce("Sibling one.");
      // Forked once: nothing stored.
      expect(await readPrefixMeta(forks.resources, ref.hash)).toBeNull();
      const second = await forkOnce("Sibling two.");
      // Forked again: stored in the background, this spec still inline.
      await waitFor(async () => (await readPrefixMeta(forks.resources, ref.hash)) !== null, {
        timeoutMs: 5_000,
      });
      const third = await forkOnce("Sibling three.");
      await nc.flush();
      expect(kinds).toEqual(["inline", "inline", "ref"]);
      // Whichever way the prefix came, the child sent the parent's conversation unchanged, and hit the
      // cache the first child wrote.
      const inherited = (body: unknown) => {
        const { system, tools, messages } = JSON.parse(String(body)) as Record<string, unknown[]>;
        return JSON.stringify({ system, tools, messages: messages!.slice(0, parentMessages) });
      };
      expect(inherited(third.body)).toBe(inherited(first.body));
      expect(inherited(second.body)).toBe(inherited(first.body));
      expect(third.usage!.cache_read_input_tokens).toBe(second.usage!.cache_read_input_tokens);
      expect(third.usage!.cache_read_input_tokens).toBeGreaterThan(3_000);
    } finally {
      spy.unsubscribe();
    }
  });
});
