// Finding nats-server, and the error that says how to install it when it is missing.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  detectContainerRuntime,
  locateNatsServer,
  NatsServerUnavailableError,
  runningNatsServerCount,
  startNatsServer,
  stopAllNatsServers,
} from "./index.js";

const emptyDir = mkdtempSync(join(tmpdir(), "forkd-no-nats-"));
afterAll(async () => {
  rmSync(emptyDir, { recursive: true, force: true });
  await stopAllNatsServers(); // in case a test found a server where it should not have
  expect(runningNatsServerCount()).toBe(0);
});

/** An environment with no nats-server anywhere and no container engine. */
const bareEnv: NodeJS.ProcessEnv = { PATH: emptyDir, HOME: emptyDir, FORKD_NO_INSTALL: "1" };
const noDockerHere = !detectContainerRuntime(bareEnv);

describe("locateNatsServer", () => {
  it("finds the binary the suite runs with", async () => {
    const location = await locateNatsServer({ mode: "binary" });
    expect(location).toMatchObject({ kind: "binary", path: expect.stringMatching(/\/nats-server$/) });
  });

  it("takes the binary from NATS_SERVER_BIN", async () => {
    const { path } = (await locateNatsServer({ mode: "binary" })) as { path: string };
    expect(await locateNatsServer({ env: { ...bareEnv, NATS_SERVER_BIN: path } })).toMatchObject({
      kind: "binary",
      path,
      route: "NATS_SERVER_BIN",
    });
  });

  it("honours FORKD_TEST_NATS=container without looking for the binary", async () => {
    expect(await locateNatsServer({ env: { ...bareEnv, FORKD_TEST_NATS: "container" } })).toMatchObject({
      kind: "container",
    });
  });

  it("rejects an unknown FORKD_TEST_NATS", async () => {
    await expect(locateNatsServer({ env: { ...bareEnv, FORKD_TEST_NATS: "docker" } })).rejects.toThrow(
      /FORKD_TEST_NATS/,
    );
  });
});

describe("without nats-server", () => {
  it("startNatsServer fails with a typed error that says how to install it", async () => {
    const error = await startNatsServer({ mode: "binary", searchPath: emptyDir, env: bareEnv }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(NatsServerUnavailableError);
    expect(error.code).toBe("nats_server_unavailable");
    expect(error.searchedDirs).toEqual([emptyDir]);
    expect(error.message).toContain(`PATH: no nats-server on ${emptyDir}`);
    expect(error.message).toContain("apt-get install -y nats-server");
    expect(error.message).toContain("release binary");
    expect(error.message).toContain("Docker");
  });

  it("reports a NATS_SERVER_BIN that does not exist", async () => {
    const missing = join(emptyDir, "nats-server");
    await expect(startNatsServer({ env: { ...bareEnv, NATS_SERVER_BIN: missing } })).rejects.toMatchObject({
      code: "nats_server_unavailable",
      binary: missing,
      message: expect.stringContaining(`NATS_SERVER_BIN: no executable ${missing} at that path`),
    });
  });

  it.skipIf(!noDockerHere)("in auto mode, says no container engine was found either", async () => {
    await expect(startNatsServer({ env: bareEnv, searchPath: emptyDir })).rejects.toMatchObject({
      code: "nats_server_unavailable",
      containerRuntimeDetected: false,
      message: expect.stringContaining("docker: no Docker engine detected"),
    });
  });
});
