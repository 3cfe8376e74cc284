// One package's unit tests alone, resolved to sources: what `pnpm mutation` runs against each mutant
// (no NATS suites, no global setup). The repository's runner is the root vitest.config.ts.
import { defineConfig } from "vitest/config";

/** The vitest config of the package whose directory is `root`. */
export function unitTestsConfig(root: string) {
  return defineConfig({
    root,
    resolve: { conditions: ["@forkd/source"] },
    // Mutated code runs instrumented, several times slower: the 10 MB hostile-input test needs room.
    test: {
      testTimeout: 30_000,
      include: ["src/**/*.test.ts"],
      exclude: ["**/*.integration.test.ts", "**/node_modules/**"],
    },
  });
}
