// What a parent keeps of a run once it has read the run's outcome, against a real nats-server: not its
// handle, and no answer to permission requests for it (neither grows with every run it ever forked).

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  emptyUsageTotals,
  eventMsgId,
  forkEventCodec,
  PROTOCOL_VERSION,
  permissionRequestCodec,
  permissionResponseCodec,
} from "@forkd/protocol";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsForkSubagent } from "./nats-fork-subagent.js";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

let server: NatsServerHandle;
let nc: NatsConnection;
let daemonSide: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  daemonSide = await connect({ servers: server.url });
});

afterAll(async () => {
  await daemonSide?.close();
  await nc?.close();
  await server?.stop();
});

/** Stores the run's terminal event, as the daemon running it would. */
async function storeEnding(forks: NatsForkSubagent, runId: string): Promise<void> {
  await forks.resources.js.publish(
    forks.resources.subjects.events(runId),
    forkEventCodec.encode({
      v: PROTOCOL_VERSION,
      run_id: runId,
      seq: 1,
      attempt: 1,
      ts: Date.now(),
      type: "aborted",
      reason: "ended for the test",
      usage: emptyUsageTotals(),
    }),
    { msgID: eventMsgId(runId, 1) },
  );
}

const parent = { agent_id: "parent-ended-runs" };

describe("a run whose outcome the parent read", () => {
  it("is not kept: its handle can be collected", async () => {
    const forks = await NatsForkSubagent.create(nc);
    try {
      const handleRef = await (async () => {
        const handle = forks.fork({ prefix: null, directive: "Ends.", parent });
        await handle.published();
        await storeEnding(forks, handle.runId);
        expect(await handle.result()).toMatchObject({ status: "killed" });
        return new WeakRef(handle);
      })();
      // A WeakRef holds its target until the end of the job that made or read it.
      await new Promise<void>((resolve) => setImmediate(resolve));
      collectGarbage();
      expect(handleRef.deref()).toBeUndefined();
    } finally {
      await forks.close();
    }
  });

  it("gets no answer to its permission requests, while a run going on does", async () => {
    const asked: string[] = [];
    const forks = await NatsForkSubagent.create(nc, {
      onPermission: async (request) => {
        asked.push(request.run_id);
        return { v: PROTOCOL_VERSION, decision: "allow" };
      },
    });
    try {
      const ask = { mode: "ask", timeout_ms: 500 } as const;
      // No daemon runs these: they stay queued, and their ending is stored below as a daemon would.
      const ending = forks.fork({ prefix: null, directive: "Ends.", parent, permissions: ask });
      const going = forks.fork({ prefix: null, directive: "Goes on.", parent, permissions: ask });
      await Promise.all([ending.published(), going.published()]);

      // Replies to requests sent in order come back in order (one subscription, one connection):
      // once the second request's answer is here, the first was answered before it or not at all.
      const replies: { runId: string; message: Msg }[] = [];
      const awaited = new Map<string, () => void>();
      const inbox = createInbox();
      const replied = daemonSide.subscribe(`${inbox}.>`, {
        callback: (_error, message) => {
          const runId = message.subject.slice(inbox.length + 1);
          replies.push({ runId, message });
          awaited.get(runId)?.();
        },
      });
      const requestFor = (runId: string) =>
        daemonSide.publish(
          forks.resources.subjects.permission(runId),
          permissionRequestCodec.encode({
            v: PROTOCOL_VERSION,
            run_id: runId,
            tool_use_id: `toolu_${asked.length}`,
            name: "Write",
            input: { file_path: "x.txt" },
            requested_at: Date.now(),
          }),
          { reply: `${inbox}.${runId}` },
        );
      const answerFor = (runId: string) =>
        replies.some((reply) => reply.runId === runId)
          ? Promise.resolve()
          : new Promise<void>((resolve) => awaited.set(runId, resolve));

      requestFor(ending.runId);
      await answerFor(ending.runId);
      expect(
        permissionResponseCodec.decode(replies.find((r) => r.runId === ending.runId)!.message.data).decision,
      ).toBe("allow");

      await storeEnding(forks, ending.runId);
      expect(await ending.result()).toMatchObject({ status: "killed", reason: "ended for the test" });

      replies.length = 0;
      requestFor(ending.runId);
      requestFor(going.runId);
      await answerFor(going.runId);
      expect(replies.map((reply) => reply.runId)).toEqual([going.runId]);
      expect(asked).toEqual([ending.runId, going.runId]);
      replied.unsubscribe();
    } finally {
      await forks.close();
    }
  });
});
