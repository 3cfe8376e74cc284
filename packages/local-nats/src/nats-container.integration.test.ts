// The container fallback, as far as a machine without a Docker engine can check it: the request
// for a container loads @testcontainers/nats lazily and turns its failure into the typed error.
import { describe, expect, it } from "vitest";
import { detectContainerRuntime, NatsServerUnavailableError, startNatsServer } from "./index.js";

describe("startNatsServer in container mode", () => {
  it.skipIf(detectContainerRuntime())(
    "without a container engine, fails with nats_server_unavailable and testcontainers' reason",
    async () => {
      const error = await startNatsServer({ mode: "container" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NatsServerUnavailableError);
      const unavailable = error as NatsServerUnavailableError;
      expect(unavailable.code).toBe("nats_server_unavailable");
      expect(unavailable.containerRuntimeDetected).toBe(false);
      expect(unavailable.message).toMatch(/container did not start: .*container runtime/);
      expect(unavailable.message).toContain("apt-get install -y nats-server");
      expect(unavailable.cause).toBeInstanceOf(Error);
    },
  );
});
