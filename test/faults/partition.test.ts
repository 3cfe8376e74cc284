// Partitions, made with a relay the test cuts (nothing passes, nothing closes). A daemon cut from NATS
// mid-run: the run resumes on another daemon within seconds on default settings, no tool runs twice,
// and the cut daemon stops its own model stream. A parent cut from NATS: its runs go on, and once
// its link is back it follows them to the end with no gap.
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { daemonPresenceCodec, type ForkEvent } from "@forkd/protocol";
import { connect } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";
import { contiguousLog } from "../harness/event-log.js";
import { useFaultParent } from "../harness/fault-parent.js";
import { type PartitionRelay, startPartitionRelay } from "../harness/partition.js";

const stack = useFaultParent("partition");
const daemons: DaemonProcess[] = [];
let relay: PartitionRelay | undefined;

afterAll(async () => {
  await stopDaemons(daemons);
  await relay?.close();
});

describe("a daemon cut from NATS mid-run", () => {
  it("loses its run to another daemon, runs no tool twice, and stops its own model stream", async () => {
    const { server, sim, workspace, forks, prefix, nc } = stack();
    const ledger = join(workspace, "partition-ledger.txt");
    await writeFile(ledger, "");
    relay = await startPartitionRelay(server.url);
    const cut = await spawnDaemon({ id: "cut-1", natsUrls: [relay.url], simUrl: sim.url, workspace });
    daemons.push(cut);
    const handle = forks.fork({
      prefix,
      parent: { agent_id: "parent-partition" },
      directive: [
        "Record, then write slowly.",
        `@sim tool Bash {"command":"echo partition >> ${ledger}"}`,
        "@sim turn",
        "@sim tps 10",
        "@sim text 100",
      ].join("\n"),
    });
    let sawResult = false;
    for await (const event of handle.events()) {
      if (event.type === "tool.result") sawResult = true;
      if (sawResult && event.type === "llm.delta") break;
    }
    // A second daemon, on a link that stays up; it must have heard the first before the cut.
    const other = await spawnDaemon({ id: "cut-2", natsUrls: [server.url], simUrl: sim.url, workspace });
    daemons.push(other);
    const beats = nc.subscribe(forks.resources.subjects.presence("cut-1"));
    for await (const message of beats) {
      if (daemonPresenceCodec.decode(message.data).runs.length > 0) break;
    }
    beats.unsubscribe();

    const streamStopped = sim.next("request", {
      filter: (entry) => entry.disconnected && entry.body.includes("Record, then"),
    });
    relay.cut();
    const cutAt = Date.now();
    let takenOverAt = 0;
    for await (const event of handle.events()) {
      if (event.type === "accepted" && event.attempt === 2) {
        takenOverAt = Date.now();
        break;
      }
    }
    expect(takenOverAt - cutAt).toBeLessThan(10_000); // ack_wait is 30 s: only the handoff is this fast
    expect((await handle.result()).status).toBe("completed");
    const events = await contiguousLog(forks.resources, handle.runId);
    const takeover = events.findIndex((event) => event.type === "accepted" && event.attempt === 2);
    expect(events[takeover]).toMatchObject({ daemon_id: "cut-2", resumed: true });
    expect(events.slice(takeover).every((event) => event.attempt === 2)).toBe(true);
    expect(readFileSync(ledger, "utf8")).toBe("partition\n");

    // The cut daemon could not publish its stream's events any more: it stopped the stream itself,
    // long before its 100 tokens at 10 a second were through.
    const stopped = await streamStopped;
    expect(stopped.outputTokensSent).toBeLessThan(100);
    expect(stopped.endedAt - cutAt).toBeLessThan(9_000);
    relay.heal();
  });
});

describe("a parent cut from NATS mid-run", () => {
  it("leaves its run going; reconnected, it follows the run to the end with no gap", async () => {
    const { server, sim, workspace, forks: observer, prefix } = stack();
    const link = await startPartitionRelay(server.url);
    const daemon = await spawnDaemon({
      id: "parent-cut-d",
      natsUrls: [server.url],
      simUrl: sim.url,
      workspace,
    });
    daemons.push(daemon);
    const nc = await connect({ servers: link.url, reconnectTimeWait: 200, maxReconnectAttempts: -1 });
    const parent = await NatsForkSubagent.create(nc);
    try {
      const handle = parent.fork({
        prefix,
        parent: { agent_id: "parent-cut" },
        directive: "Write on, whoever listens.\n@sim tps 50\n@sim text 100",
      });
      const seen: ForkEvent[] = [];
      const following = (async () => {
        for await (const event of handle.events()) seen.push(event);
      })();
      // Cut once the stream is under way; the run must finish without its parent.
      for await (const event of handle.events()) if (event.type === "llm.delta") break;
      link.cut();
      const ended = await observer.attach(handle.runId).result();
      expect(ended.status).toBe("completed");
      // The link comes back after a partition long enough for both ends to give up: the parent's
      // connection is reset, and it reconnects.
      link.heal({ reset: true });
      await following;
      expect(seen.map((event) => event.seq)).toEqual(seen.map((_, index) => index + 1));
      expect(seen.at(-1)?.type).toBe("completed");
      expect((await handle.result()).status).toBe("completed");
    } finally {
      await parent.close();
      await nc.close();
      await link.close();
    }
  });
});
