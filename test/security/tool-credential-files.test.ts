// The daemon's credential files (`nats.passFile`, `credsFile`, `nkeySeedFile`, `tls.keyFile`) where
// the model can name them: in the workspace. The sandbox covers them for Bash, but Read, Grep, Edit
// and Write run in the daemon's own process. Scrubbing hid the secret's exact value in a Read, and
// nothing else: Grep answers "found" or "not found" for `^s3`, `^s3c`, … (an oracle that spells the
// secret out a character at a time without ever showing it), and Edit rewrites the file so that its
// value no longer matches the scrubber (`s` → `s `) before a Read shows it — and the daemon's
// credential is then broken for its next connection. The daemon's own tool factory, from a real
// configuration, on a real nats-server.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolOutcome } from "@forkd/core";
import { createDaemonLogger, loadDaemonConfig } from "@forkd/daemon";
import { daemonRunTools, registerDaemonSecrets, secretsOfConfig } from "@forkd/daemon/internal";
import { type ForkSpec, forkSubjects } from "@forkd/protocol";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useNatsServer } from "../harness/nats.js";

const PASSWORD = "s3cretPassw0rdOfTheDaemon";
const nats = useNatsServer();
let workspace: string;
let nc: NatsConnection;
let call: (name: string, input: Record<string, unknown>) => Promise<ToolOutcome>;

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-credential-files-"));
  await writeFile(join(workspace, "nats.pass"), `${PASSWORD}\n`);
  await writeFile(join(workspace, "notes.txt"), "an ordinary file\n");
  nc = await connect({ servers: nats().url });
  const config = loadDaemonConfig({
    env: {
      FORKD_WORKSPACE: workspace,
      NATS_URL: nats().url,
      NATS_PASSWORD_FILE: join(workspace, "nats.pass"),
      // Only the file tools: they are what runs outside the sandbox.
      FORKD_BASH_POLICY: "off",
    },
  });
  registerDaemonSecrets(secretsOfConfig(config));
  const factory = daemonRunTools({
    config,
    nc,
    subjects: forkSubjects("agent"),
    logger: createDaemonLogger({ level: "silent", format: "json", daemonId: "credential-files" }),
  });
  const spec = { run_id: "run-credential-files", isolation: { worktree: false } } as ForkSpec;
  const tools = await factory({ spec, signal: new AbortController().signal });
  let n = 0;
  call = (name, input) =>
    tools.dispatcher.execute(
      { id: `toolu_${++n}`, name, input },
      { runId: spec.run_id, turn: 1, cwd: tools.cwd, signal: new AbortController().signal },
    );
});

afterAll(async () => {
  await nc?.close();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

describe("the file tools keep away from the daemon's credential files", () => {
  it("Read refuses the file, by any path to it", async () => {
    for (const path of ["nats.pass", join(workspace, "nats.pass"), "./sub/../nats.pass"]) {
      const read = await call("Read", { file_path: path });
      expect(read.isError, path).toBe(true);
      expect(read.content).toMatch(/credential/);
    }
    expect(await call("Read", { file_path: "notes.txt" })).toMatchObject({ isError: false });
  });

  it("Grep is no oracle: the file is never searched", async () => {
    for (const pattern of ["^s3", "^x", "Passw0rd"]) {
      for (const output_mode of ["files_with_matches", "count", "content"]) {
        const grep = await call("Grep", { pattern, path: ".", output_mode });
        expect(grep.content, `${pattern} ${output_mode}`).not.toContain("nats.pass");
      }
    }
    const named = await call("Grep", { pattern: "^s3", path: "nats.pass" });
    expect(named.isError).toBe(true);
    expect(named.content).not.toMatch(/Found 1 file/);
  });

  it("Edit and Write cannot change it", async () => {
    const edit = await call("Edit", {
      file_path: "nats.pass",
      old_string: "s",
      new_string: "s ",
      replace_all: true,
    });
    expect(edit.isError).toBe(true);
    const write = await call("Write", { file_path: "nats.pass", content: "taken over\n" });
    expect(write.isError).toBe(true);
    expect(await readFile(join(workspace, "nats.pass"), "utf8")).toBe(`${PASSWORD}\n`);
  });
});
