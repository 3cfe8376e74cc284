// Shared by the deployment tests: where deploy/ is, the test passwords the NATS configs read from
// the environment, and `nats-server -t` on a config file.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { INSTALL_HINT } from "@forkd/testing";

/** The repository's root directory. */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Absolute path of a file under the repository root. */
export function repoPath(relative: string): string {
  return fileURLToPath(new URL(relative, new URL("../../", import.meta.url)));
}

/** A file under the repository root, as text. */
export function readRepoFile(relative: string): string {
  return readFileSync(repoPath(relative), "utf8");
}

/** The NATS roles of deploy/nats/accounts.conf and the environment variable holding each password. */
export const ROLE_PASSWORD_VARS = {
  parent: "FORKD_PARENT_PASSWORD",
  daemon: "FORKD_DAEMON_PASSWORD",
  observer: "FORKD_OBSERVER_PASSWORD",
  admin: "FORKD_ADMIN_PASSWORD",
  sys: "FORKD_SYS_PASSWORD",
} as const;

export type Role = keyof typeof ROLE_PASSWORD_VARS;

/** The password each role gets in these tests. */
export const TEST_PASSWORDS: Record<Role, string> = {
  parent: "test-parent-secret",
  daemon: "test-daemon-secret",
  observer: "test-observer-secret",
  admin: "test-admin-secret",
  sys: "test-sys-secret",
};

/** The environment variables the NATS configs expect, set to {@link TEST_PASSWORDS}. */
export function passwordEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(ROLE_PASSWORD_VARS).map(([role, name]) => [name, TEST_PASSWORDS[role as Role]]),
  );
}

/**
 * The nats-server binary; the deployment tests need the real one (`-t` has no container form).
 * The suite's global setup found it (or installed it) and put it in `NATS_SERVER_BIN`.
 */
export function natsServerBinary(): string {
  const binary = process.env.NATS_SERVER_BIN;
  if (!binary)
    throw new Error(`NATS_SERVER_BIN is not set: the test suite's global setup did not run. ${INSTALL_HINT}`);
  return binary;
}

/** Runs `nats-server -t -c <file>` (configuration check) with `env` and returns its outcome. */
export function checkNatsConfig(file: string, env: Record<string, string>): { ok: boolean; output: string } {
  const { PATH, HOME } = process.env;
  const result = spawnSync(natsServerBinary(), ["-t", "-c", file], {
    env: { ...(PATH ? { PATH } : {}), ...(HOME ? { HOME } : {}), ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
  return { ok: result.status === 0, output: `${result.stdout ?? ""}${result.stderr ?? ""}`.trim() };
}

/**
 * Sets environment variables for this process (and the nats-server it spawns); returns the function
 * that puts the previous values back.
 */
export function applyEnv(vars: Record<string, string>): () => void {
  const saved = Object.keys(vars).map((name) => [name, process.env[name]] as const);
  Object.assign(process.env, vars);
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}
