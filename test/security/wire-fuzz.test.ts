// Issue #11's fuzz run, quick form: hostile messages on every subject a daemon listens to (aborts,
// spec subjects, the max-deliveries advisory). The daemon stays up and runs a normal fork
// afterwards, every malformed abort and advisory is counted under its protocol error code, and every
// hostile spec ends its own run with the expected `failed` code, or leaves the queue when its subject
// is no run id. Memory under the full 10,000 messages is measured by bench #9 (bench/src/b9-hostile-wire.ts).
import { lastLoggedEvent } from "@forkd/client";
import { waitFor } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";
import { hostileMessages, refusedControlCounts } from "../harness/hostile-wire.js";

const stack = useForkdStack({ daemonConfig: { metricsPort: 0, concurrency: 8 } });
const COUNT = 1_000;

describe("hostile wire", () => {
  it(`${COUNT} hostile messages: the daemon stays up and gives each its typed refusal`, async () => {
    const { nc, forks, daemons } = stack();
    const messages = hostileMessages(COUNT, { tag: "fz" });
    const expectedControls = new Map<string, number>();
    for (const message of messages) {
      if (message.channel === "spec") {
        await forks.resources.js.publish(message.subject, message.payload);
      } else {
        nc.publish(message.subject, message.payload);
        if (message.expected !== "none")
          expectedControls.set(message.expected, (expectedControls.get(message.expected) ?? 0) + 1);
      }
    }
    await nc.flush();
    const metricsUrl = daemons[0]!.metricsUrl!;
    await waitFor(
      async () => {
        const seen = await refusedControlCounts(metricsUrl);
        return [...expectedControls].every(([code, count]) => seen[code] === count);
      },
      { timeoutMs: 60_000, message: "every malformed abort and advisory counted under its code" },
    );
    expect(await refusedControlCounts(metricsUrl)).toEqual(Object.fromEntries(expectedControls));

    // Every hostile spec failed its own run with the expected code; specs on no-run-id subjects left.
    const specs = messages.filter((message) => message.channel === "spec");
    for (const spec of specs.filter((message) => message.runId !== undefined)) {
      const last = await waitFor(() => lastLoggedEvent(forks.resources, spec.runId!), { timeoutMs: 30_000 });
      expect(last.event.type === "failed" && last.event.error.code, spec.runId).toBe(spec.expected);
    }
    await waitFor(
      async () =>
        (await forks.resources.jsm.streams.info(forks.resources.subjects.streams.specs)).state.messages === 0,
    );

    // And the daemon still works.
    expect(daemons[0]!.daemon.state).toBe("running");
    const handle = forks.fork({
      prefix: null,
      directive: "Still there?",
      parent: { agent_id: "after-fuzz" },
    });
    expect((await handle.result()).status).toBe("completed");
  });
});
