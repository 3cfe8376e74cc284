// Finding 17 of issue #11: a NATS URL with credentials was echoed in connection errors, and
// `--nats-pass` shows in the process list. The password must appear in no log line and no error,
// and it can come from a file.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";
import { connectNats, createDaemonLogger } from "@forkd/daemon";
import { freePort } from "@forkd/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/support.js";
import { spawnDaemon } from "../harness/daemons.js";
import { useNatsServer } from "../harness/nats.js";

const SECRET = "s3cret-Pa55";
const DAEMON_MAIN = fileURLToPath(new URL("../../packages/daemon/dist/main.js", import.meta.url));
const nats = useNatsServer({ config: `authorization { user: forkd, password: "${SECRET}" }` });
let workspace: string;

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-credentials-"));
});

afterAll(async () => {
  await rm(workspace, { recursive: true, force: true });
});

/** Runs the daemon process to its exit; returns everything it wrote to stderr. */
function daemonStderr(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [DAEMON_MAIN, ...args], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      FORKD_WORKSPACE: workspace,
      FORKD_LOG_FORMAT: "json",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stderr })));
}

describe("credentials stay out of logs and errors", () => {
  it("a daemon that cannot connect names the server without its password", async () => {
    const closed = await freePort();
    const { code, stderr } = await daemonStderr(["--nats", `nats://forkd:${SECRET}@127.0.0.1:${closed}`], {});
    expect(code).toBe(1);
    expect(stderr).not.toContain(SECRET);
    expect(stderr).toContain(`nats://forkd:***@127.0.0.1:${closed}`);
    // The error itself, as an embedding program gets it from startDaemon/connectNats.
    const url = `nats://forkd:${SECRET}@127.0.0.1:${closed}`;
    const refused = await connectNats({ nats: { servers: [url] }, daemonId: "x" }).catch(
      (error: Error) => error,
    );
    expect(refused).toMatchObject({ code: "nats_unavailable" });
    expect((refused as Error).message).not.toContain(SECRET);
  });

  it("a CLI command that cannot connect says where, without the password", async () => {
    const closed = await freePort();
    const result = await runCli(["ps", "--nats", `nats://forkd:${SECRET}@127.0.0.1:${closed}`]);
    expect(result.code).toBe(3);
    expect(`${result.stdout}${result.stderr}`).not.toContain(SECRET);
    expect(result.stderr).toContain("nats://forkd:***@");
  });

  it("the daemon's logger redacts URL credentials in any field, error messages and stacks included", async () => {
    const destination = new PassThrough();
    let written = "";
    destination.on("data", (chunk: Buffer) => {
      written += chunk.toString("utf8");
    });
    const logger = createDaemonLogger({ level: "info", format: "json", daemonId: "redact", destination });
    logger.error({ err: new Error(`cannot reach nats://forkd:${SECRET}@nats-1:4222`) }, "connect failed");
    logger.info({ servers: [`tls://${SECRET}@nats-2:4222`] }, "token in a URL");
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).not.toContain(SECRET);
    expect(written).toContain("nats://forkd:***@nats-1:4222");
    expect(written).toContain("tls://***@nats-2:4222");
  });

  it("the password can come from a file; --nats-pass on the command line is warned about", async () => {
    const passFile = join(workspace, "nats-password");
    await writeFile(passFile, `${SECRET}\n`, { mode: 0o600 });
    const daemon = await spawnDaemon({
      id: "pass-file",
      natsUrls: [nats().url],
      simUrl: "http://127.0.0.1:9",
      workspace,
      extraEnv: { NATS_USER: "forkd", NATS_PASSWORD_FILE: passFile },
    });
    await daemon.kill("SIGTERM");
    expect(JSON.stringify(daemon.logs)).not.toContain(SECRET);

    const closed = await freePort();
    const { stderr } = await daemonStderr(
      ["--nats", `nats://127.0.0.1:${closed}`, "--nats-pass", SECRET],
      {},
    );
    expect(stderr).toContain("--nats-pass is visible to every user in the process list");
  });
});
