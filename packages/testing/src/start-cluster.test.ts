// A cluster is made of nats-server processes: without the binary it fails at once, saying so.
import { expect, it } from "vitest";
import { startNatsCluster } from "./index.js";

it("startNatsCluster says a cluster needs the binary", async () => {
  const env = {
    PATH: "/nonexistent",
    HOME: "/nonexistent",
    FORKD_NO_INSTALL: "1",
    FORKD_TEST_NATS: "container",
  };
  await expect(startNatsCluster({ env })).rejects.toMatchObject({
    code: "nats_server_unavailable",
    message: expect.stringContaining("startNatsCluster needs the nats-server binary"),
  });
});
