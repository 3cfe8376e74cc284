// A handle's abort against a real nats-server, where the parent's connection closes while a
// warm-first sibling's spec is still being launched (a Ctrl-C mid fan-out): the abort's repeat after
// the launch must not throw where no one awaits it, or the parent's process dies of an unhandled
// rejection instead of stopping cleanly.
import { type LogFn, type Logger, silentLogger } from "@forkd/core";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsForkHandle } from "./nats-fork-subagent.js";
import { ensureForkResources } from "./resources.js";
import { getRunState } from "./run-registry.js";

let server: NatsServerHandle;

beforeAll(async () => {
  server = await startNatsServer();
});

afterAll(async () => {
  await server?.stop();
});

describe("NatsForkHandle.abort before its launch ends", () => {
  it("flags the run, and drops the repeat after the launch once the connection is closed", async () => {
    const nc = await connect({ servers: server.url });
    const resources = await ensureForkResources(nc);
    let endLaunch!: () => void;
    const launch = new Promise<void>((resolve) => {
      endLaunch = resolve;
    });
    let onDebug: LogFn = () => {};
    const logger: Logger = { ...silentLogger, debug: (fields, message) => onDebug(fields, message) };
    const dropped = new Promise<Record<string, unknown>>((resolve) => {
      onDebug = (fields, message) => {
        if (message?.startsWith("abort after launch not sent")) resolve(fields);
      };
    });
    const unhandled: unknown[] = [];
    let onUnhandled!: (reason: unknown) => void;
    const rejected = new Promise<void>((resolve) => {
      onUnhandled = (reason) => {
        unhandled.push(reason);
        resolve();
      };
    });
    process.on("unhandledRejection", onUnhandled);
    try {
      const handle = new NatsForkHandle(resources, "run-launching-1", launch, logger, "owner-key");
      await handle.abort("interrupted");
      expect((await getRunState(resources, "run-launching-1"))?.state.abort?.reason).toBe("interrupted");

      await nc.close();
      endLaunch();
      // Either the repeat is dropped (and logged) or it throws where nobody awaits it.
      await Promise.race([dropped, rejected]);
      expect(unhandled).toEqual([]);
      expect(await dropped).toMatchObject({ runId: "run-launching-1" });
    } finally {
      process.off("unhandledRejection", onUnhandled);
      await nc.close();
    }
  });
});
