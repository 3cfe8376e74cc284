// Nothing survives a crashed test run: a process that started a server and a cluster is SIGKILLed
// (no exit handler runs), and every nats-server it started dies with it.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { isProcessAlive, startNatsServer, waitFor } from "./index.js";

const scratch = await mkdtemp(join(tmpdir(), "forkd-crash-test-"));
afterAll(() => rm(scratch, { recursive: true, force: true }));

it("kills every server of a test process that dies by SIGKILL, and sweeps its temp dirs later", async () => {
  const index = fileURLToPath(new URL("./index.ts", import.meta.url));
  const script = join(scratch, "crash.mts");
  await writeFile(
    script,
    `import { dirname } from "node:path";
import { startNatsCluster, startNatsServer } from ${JSON.stringify(index)};
const server = await startNatsServer();
const cluster = await startNatsCluster({ nodes: 3 });
const dirs = [server.storeDir, dirname(cluster.nodes[0].storeDir)];
console.log(JSON.stringify({ pids: [server.pid, ...cluster.nodes.map((n) => n.pid)], dirs }));
setInterval(() => {}, 1_000);
`,
  );
  const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const lines = createInterface({ input: child.stdout! });
  let started: { pids: number[]; dirs: string[] } | undefined;
  for await (const line of lines) {
    if (line.startsWith("{")) {
      started = JSON.parse(line);
      break;
    }
  }
  expect(started?.pids).toHaveLength(4);
  for (const pid of started!.pids) expect(isProcessAlive(pid)).toBe(true);

  child.kill("SIGKILL");
  await exited;
  // The servers are not our children: no event tells us they died, so poll under a deadline.
  await waitFor(() => started!.pids.every((pid) => !isProcessAlive(pid)), {
    timeoutMs: 5_000,
    message: "the crashed process's nats-servers to die",
  });

  // Its temp dirs outlive it (no exit handler ran); this process's first start sweeps them (unless
  // a concurrent test worker's first start already did).
  const next = await startNatsServer();
  await next.stop();
  expect(started!.dirs.filter((dir) => existsSync(dir))).toEqual([]);
});
