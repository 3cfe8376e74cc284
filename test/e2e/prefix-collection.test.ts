// Collection of unused prefixes (packages/client/src/prefix-collection.ts): a prefix no live run
// refers to is removed; a fork published while its prefix is being collected still runs, with the
// prefix's own bytes, in each order the collector and the parent can interleave.
import { liveRunIds, NatsForkSubagent } from "@forkd/client";
import {
  collectUnusedPrefixes,
  deleteMarkedPrefix,
  encodeStoredPrefix,
  markUnusedPrefixes,
  readPrefixMeta,
  referencedPrefixes,
} from "@forkd/client/internal";
import { createForkPrefix } from "@forkd/core";
import type { ForkPrefix } from "@forkd/protocol";
import { loadFixture, waitFor } from "@forkd/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

const stack = useForkdStack({ daemons: ["collector-a"] });
let forks: NatsForkSubagent;
let prefix: ForkPrefix;
let hash: string;
const parent = { agent_id: "collected-parent" };
/** Far enough ahead that every stored prefix counts as unused for the window. */
const later = () => Date.now() + 1;

beforeAll(async () => {
  // Every prefix through the object store, however small.
  forks = await NatsForkSubagent.create(stack().nc, { prefixTransport: "ref" });
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
  hash = encodeStoredPrefix(prefix).ref.hash;
});
afterAll(async () => {
  await forks.close();
});

/** The prefix the simulator received in the last request: the parent's messages it was sent. */
function lastRequestMessages(): unknown[] {
  const body = JSON.parse(String(stack().sim.requests().at(-1)!.body)) as { messages: unknown[] };
  return body.messages.slice(0, parentMessages().length);
}
const parentMessages = () => (prefix.params as { messages: unknown[] }).messages;

describe("prefix collection", () => {
  it("a fork published after its prefix was collected uploads it again and runs with its bytes", async () => {
    expect((await forks.fork({ prefix, directive: "First.\n@sim text 5", parent }).result()).status).toBe(
      "completed",
    );
    const marked = await markUnusedPrefixes(forks.resources, later());
    expect(marked.map((candidate) => candidate.meta.name)).toEqual([hash]);
    expect((await referencedPrefixes(forks.resources)).has(hash)).toBe(false);
    expect(await deleteMarkedPrefix(forks.resources, marked[0]!)).toBe(true);
    expect((await readPrefixMeta(forks.resources, hash))?.meta.deleted).toBe(true);

    // This parent believes the prefix is stored: its spec refers to it at once.
    const outcome = await forks.fork({ prefix, directive: "Second.\n@sim text 5", parent }).result();
    expect(outcome.status).toBe("completed");
    expect(lastRequestMessages()).toEqual(parentMessages());
    const stored = await readPrefixMeta(forks.resources, hash);
    expect(stored?.meta.deleted).not.toBe(true);
  });

  it("a fork published between the mark and the delete keeps its prefix: the delete finds it changed", async () => {
    const marked = await markUnusedPrefixes(forks.resources, later());
    expect(marked.map((candidate) => candidate.meta.name)).toEqual([hash]);
    // The collector read the references before the spec was published.
    expect((await referencedPrefixes(forks.resources)).has(hash)).toBe(false);
    const third = forks.fork({ prefix, directive: "Third.\n@sim text 5", parent });
    // Published: stored, and its prefix confirmed (a confirmation waits for one still running for an
    // earlier fork, so the run itself may end first).
    await third.published();
    const outcome = await third.result();
    expect(outcome.status).toBe("completed");
    expect(lastRequestMessages()).toEqual(parentMessages());
    expect(await deleteMarkedPrefix(forks.resources, marked[0]!)).toBe(false);
    expect((await readPrefixMeta(forks.resources, hash))?.meta.deleted).not.toBe(true);
  });

  it("a prefix a running run refers to is not collected; once the run ended, it is", async () => {
    const running = forks.fork({ prefix, directive: "Hang.\n@sim ttft 600000", parent });
    await waitFor(async () => (await forks.state(running.runId))?.status === "running");
    expect(await collectUnusedPrefixes(forks.resources, { retentionMs: 0, now: later() })).toBe(0);
    const kept = await readPrefixMeta(forks.resources, hash);
    expect(kept?.meta.deleted).not.toBe(true);
    expect(kept?.meta.headers?.["Forkd-Collecting"]).toBeUndefined();
    await running.abort("test over");
    await running.result();
    // The daemon acks the spec just after the terminal event: the collector reads the work queue.
    await waitFor(async () => !(await liveRunIds(forks.resources)).includes(running.runId));
    expect(await collectUnusedPrefixes(forks.resources, { retentionMs: 0, now: later() })).toBe(1);
    expect((await readPrefixMeta(forks.resources, hash))?.meta.deleted).toBe(true);
  });

  it("siblings stored together share one confirmation of their prefix: a fan-out reads its metadata a few times, not once per child", async () => {
    const children = 20;
    let metaReads = 0;
    const reads = stack().nc.subscribe(
      `$JS.API.STREAM.MSG.GET.${forks.resources.subjects.bucketStreams.prefixes}`,
      {
        callback: () => {
          metaReads += 1;
        },
      },
    );
    await stack().nc.flush();
    const handles = forks.fanOut(
      { prefix, parent },
      Array.from({ length: children }, (_, i) => ({ directive: `Sibling ${i}.\n@sim text 5` })),
      { warmFirst: false },
    );
    await Promise.all(handles.map((handle) => handle.published()));
    await stack().nc.flush();
    reads.unsubscribe();
    // The prefix was collected by the test before: a confirmation found it gone and uploaded it again.
    expect((await readPrefixMeta(forks.resources, hash))?.meta.deleted).not.toBe(true);
    expect(metaReads).toBeGreaterThan(0);
    expect(metaReads).toBeLessThan(children / 2);
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(children).fill("completed"));
  });
});
