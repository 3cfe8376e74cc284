// One package's unit tests alone, resolved to sources: what `pnpm mutation` runs against each mutant
// (no NATS suites, no global setup). The repository's runner is the root vitest.config.ts.
import { defineConfig } from "vitest/config";

/**
 * The vitest config of the package whose directory is `root`.
 * @param include its unit tests, or only some of them (`pnpm mutation --tests`).
 */
export function unitTestsConfig(root: string, include: readonly string[] = ["src/**/*.test.ts"]) {
  return defineConfig({
    root,
    resolve: { conditions: ["@forkd/source"] },
    // Mutated code runs instrumented, several times slower: the 10 MB hostile-input test needs room.
    test: {
      testTimeout: 30_000,
      include: [...include],
      exclude: ["**/*.integration.test.ts", "**/node_modules/**"],
    },
  });
}
