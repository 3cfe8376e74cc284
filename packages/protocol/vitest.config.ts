// This package's unit tests alone, resolved to sources: what `pnpm mutation` runs against each mutant
// (no NATS suites, no global setup). The repository's runner is the root vitest.config.ts.
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ["@forkd/source"] },
  test: { include: ["src/**/*.test.ts"], exclude: ["**/*.integration.test.ts", "**/node_modules/**"] },
});
