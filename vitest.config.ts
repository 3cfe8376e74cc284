// One runner for the whole repository: unit tests beside the code, integration tests that need a
// real nats-server or several processes, and cross-package end-to-end and fault tests under test/.
import { defineConfig } from "vitest/config";

const resolve = { conditions: ["@forkd/source"] };
// Finds or installs nats-server once per run; without one the run fails here with one error.
const globalSetup = ["test/setup/nats-server.ts"];

export default defineConfig({
  test: {
    projects: [
      {
        resolve,
        test: {
          name: "unit",
          globalSetup,
          include: ["packages/*/src/**/*.test.ts"],
          exclude: ["**/*.integration.test.ts", "**/node_modules/**"],
        },
      },
      {
        resolve,
        test: {
          name: "integration",
          globalSetup,
          include: ["packages/*/src/**/*.integration.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        resolve,
        test: {
          name: "e2e",
          globalSetup,
          include: ["test/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
