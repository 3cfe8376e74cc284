// A daemon cut from NATS in the middle of a run (a blackholed link: nothing passes, nothing closes).
// The run must resume on another daemon, within seconds on default settings; no tool may run twice;
// and the cut daemon must stop its own model stream once it notices it can no longer publish.
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { daemonPresenceCodec } from "@forkd/protocol";
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
