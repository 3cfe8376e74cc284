// Without a NATS server, the suite stops once with the resolver's error, before any test runs,
// instead of failing every test that needed a server (or skipping them).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const repo = fileURLToPath(new URL("../..", import.meta.url));

it("an integration run with no server fails once, naming each route", () => {
  const run = spawnSync(
    process.execPath,
    [
      "node_modules/vitest/vitest.mjs",
      "run",
      "--project",
      "integration",
      "packages/local-nats/src/nats-server.integration.test.ts",
    ],
    {
      cwd: repo,
      encoding: "utf8",
      env: {
        ...process.env,
        NATS_SERVER_BIN: "/nonexistent/nats-server",
        FORKD_NO_INSTALL: "1",
        CI: "1",
        NO_COLOR: "1",
        FORCE_COLOR: "0",
      },
      timeout: 90_000,
    },
  );
  const output = `${run.stdout}${run.stderr}`;
  expect(run.status).not.toBe(0);
  expect(output.match(/NatsServerUnavailableError: no NATS server could be had/g)).toHaveLength(1);
  expect(output).toContain("NATS_SERVER_BIN: no executable /nonexistent/nats-server at that path");
  // No test ran, so none failed or was skipped one by one.
  expect(output).not.toMatch(/Tests\s+\d+ (failed|skipped)/);
});
