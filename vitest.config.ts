// One runner for the whole repository: unit tests beside the code, integration tests that need a
// real nats-server or several processes, and cross-package end-to-end and fault tests under test/.
import { defineConfig } from "vitest/config";

const resolve = { conditions: ["@forkd/source"] };
// Tests run in Vite's server (SSR) environment, whose module resolution has conditions of its own:
// without them, an import of a sibling package resolves to its dist/, yesterday's build.
const ssr = { resolve: { conditions: ["@forkd/source"], externalConditions: ["@forkd/source"] } };
// Finds or installs nats-server once per run; without one the run fails here with one error.
const globalSetup = ["test/setup/nats-server.ts"];

export default defineConfig({
  test: {
    projects: [
      {
        resolve,
        ssr,
        test: {
          name: "unit",
          globalSetup,
          // scripts/: the pure parts of the repository's tools (what `pnpm mutation --changed` selects).
          include: ["packages/*/src/**/*.test.ts", "packages/web/app/**/*.test.ts", "scripts/**/*.test.ts"],
          exclude: ["**/*.integration.test.ts", "**/node_modules/**"],
        },
      },
      {
        resolve,
        ssr,
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
        ssr,
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
