// The `forkd-daemon` launcher (packages/daemon/bin/forkd-daemon), as a user starts it: it becomes the
// daemon's process (exec) with the runtime settings the daemon ships with, and an operator's own
// settings win over them.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, spawnDaemon } from "../harness/daemons.js";

let server: NatsServerHandle;
let workspace: string;
const running = new Set<DaemonProcess>();

/** The command line and environment of a running process, from /proc. */
function processOf(pid: number): { argv: string[]; env: Map<string, string> } {
  const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  const env = new Map(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)] as const),
  );
  return { argv, env };
}

/** Starts a daemon through the launcher (the harness's way) and reads its process. */
async function launch(id: string, extraEnv: Record<string, string> = {}) {
  // No model call is made: the simulator's address is never dialled.
  const daemon = await spawnDaemon({
    id,
    natsUrls: [server.url],
    simUrl: "http://127.0.0.1:9",
    workspace,
    bash: "off",
    extraEnv,
  });
  running.add(daemon);
  return processOf(daemon.child.pid!);
}

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-launcher-"));
  server = await startNatsServer();
});

afterEach(async () => {
  await Promise.all([...running].map((daemon) => daemon.kill("SIGKILL")));
  running.clear();
});

afterAll(async () => {
  await server?.stop();
  await rm(workspace, { recursive: true, force: true });
});

describe("forkd-daemon, the launcher", () => {
  it("becomes the daemon's node process with a 2 MiB young generation and two malloc arenas", async () => {
    const { argv, env } = await launch("launcher-defaults");
    // The pid the launcher was started as is node itself: signals reach the daemon, not a wrapper.
    expect(argv[0]).toMatch(/(^|\/)node$/);
    expect(argv.slice(1, 2)).toEqual(["--max-semi-space-size=2"]);
    expect(argv[2]).toMatch(/packages\/daemon\/bin\/\.\.\/dist\/main\.js$/);
    expect(env.get("MALLOC_ARENA_MAX")).toBe("2");
  });

  it("takes the operator's flags from FORKD_NODE_FLAGS (empty: Node's defaults) and MALLOC_ARENA_MAX", async () => {
    const custom = await launch("launcher-custom", {
      FORKD_NODE_FLAGS: "--max-semi-space-size=4 --max-old-space-size=256",
      MALLOC_ARENA_MAX: "8",
    });
    expect(custom.argv.slice(1, 3)).toEqual(["--max-semi-space-size=4", "--max-old-space-size=256"]);
    expect(custom.env.get("MALLOC_ARENA_MAX")).toBe("8");
    const none = await launch("launcher-none", { FORKD_NODE_FLAGS: "" });
    expect(none.argv[1]).toMatch(/dist\/main\.js$/);
  });

  it("keeps a young-generation size already given in NODE_OPTIONS", async () => {
    const { argv, env } = await launch("launcher-node-options", {
      NODE_OPTIONS: "--max-semi-space-size=8",
    });
    expect(argv.some((arg) => arg.startsWith("--max-semi-space-size"))).toBe(false);
    expect(env.get("NODE_OPTIONS")).toBe("--max-semi-space-size=8");
  });
});
