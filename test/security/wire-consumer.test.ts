import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { loadDaemonConfig } from "@forkd/daemon";
import { forkSubjects } from "@forkd/protocol";
import { loadFixture } from "@forkd/testing";
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { useDeployedNats } from "../harness/deployed.js";

const subjects = forkSubjects("agent");
const deployed = useDeployedNats("wire-consumer");

describe("the daemons' consumer under deploy/nats/accounts.conf", () => {
  it("a parent forks before any daemon runs, and cannot create or change the daemons' consumer", async () => {
    // The parent comes first: the streams are its to create, the consumer is not.
    const forks = await NatsForkSubagent.create(await deployed().connectAs("parent"));
    const fixture = await loadFixture("4k");
    const handle = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "Say done.\n@sim text 20",
      parent: { agent_id: "early-parent" },
    });
    await handle.published();
    const admin = await jetstreamManager(await deployed().connectAs("admin"));
    await expect(admin.consumers.info(subjects.streams.specs, subjects.specsConsumer)).rejects.toThrow(
      /consumer not found/,
    );

    await deployed().startDaemon("wire-consumer-daemon");

    expect((await handle.result()).status).toBe("completed");

    // A hostile parent creates the daemons' consumer again with the config of its choice, by the
    // client's API and by both API subjects nats-server 2.9 answers.
    const before = (await admin.consumers.info(subjects.streams.specs, subjects.specsConsumer)).config;
    const hostile = await deployed().connectAs("parent");
    const hostileConfig = {
      durable_name: subjects.specsConsumer,
      ack_policy: AckPolicy.Explicit,
      max_ack_pending: 1,
      max_deliver: 1,
      ack_wait: 1_000_000_000,
    };
    await expect(
      (await jetstreamManager(hostile)).consumers.add(subjects.streams.specs, hostileConfig),
    ).rejects.toThrow(/Permissions Violation/);
    for (const subject of [
      `$JS.API.CONSUMER.CREATE.${subjects.streams.specs}.${subjects.specsConsumer}`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${subjects.streams.specs}.${subjects.specsConsumer}`,
    ]) {
      await expect(
        hostile.request(
          subject,
          JSON.stringify({ stream_name: subjects.streams.specs, config: hostileConfig }),
        ),
      ).rejects.toThrow(/Permissions Violation/);
    }
    const after = (await admin.consumers.info(subjects.streams.specs, subjects.specsConsumer)).config;
    expect(after).toEqual(before);
    expect(after.max_deliver).toBe(loadDaemonConfig({ env: {} }).maxDeliver); // the daemon's default
    await forks.close();
  });
});
