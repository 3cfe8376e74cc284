// The hostile corpus is honest both ways: real bash does harm with every payload (so the corpus
// tests something), and the classifier refuses every one (so Bash under the read-only policy never
// runs it). Breaking a class rule of the classifier makes the second part fail for that class.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { classifyShellCommand } from "./classify.js";
import { HOSTILE_SHELL_CORPUS, type HostileShellPayload } from "./hostile-corpus.js";

let listener: Server;
let port = 0;
let connections = 0;
const connectionWaiters = new Set<() => void>();
const scratch = mkdtempSync(join(tmpdir(), "forkd-hostile-shell-"));

beforeAll(async () => {
  listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
    for (const wake of connectionWaiters) wake();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  rmSync(scratch, { recursive: true, force: true });
});

const commandOf = (payload: HostileShellPayload): string => payload.command.replaceAll("PORT", String(port));
const allPayloads = HOSTILE_SHELL_CORPUS.flatMap((entry) =>
  entry.payloads.map((payload) => ({ className: entry.name, payload })),
);

/** Names and contents of the files of `dir`: what a payload that writes changes. */
function snapshot(dir: string): string {
  return JSON.stringify(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name), "utf8")]));
}

function runBash(command: string, cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["--noprofile", "--norc", "-c", command], {
      cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, LC_ALL: "C" },
      stdio: "ignore",
      timeout: 10_000,
    });
    child.on("error", reject);
    child.on("close", () => resolve());
  });
}

/** Resolves once the listener has counted more than `seen` connections, or after `ms`. */
function connectionAfter(seen: number, ms: number): Promise<boolean> {
  if (connections > seen) return Promise.resolve(true);
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      connectionWaiters.delete(wake);
      resolve(true);
    };
    const timer = setTimeout(() => {
      connectionWaiters.delete(wake);
      resolve(connections > seen);
    }, ms);
    connectionWaiters.add(wake);
  });
}

describe("the hostile shell corpus", () => {
  it("has payloads in every class, each named once", () => {
    expect(HOSTILE_SHELL_CORPUS.length).toBeGreaterThanOrEqual(6);
    for (const entry of HOSTILE_SHELL_CORPUS) expect(entry.payloads.length, entry.name).toBeGreaterThan(0);
    const commands = allPayloads.map(({ payload }) => payload.command);
    expect(new Set(commands).size).toBe(commands.length);
  });

  it.each(allPayloads)("[$className] real bash does harm with $payload.command", async ({ payload }) => {
    const cwd = mkdtempSync(join(scratch, "run-"));
    for (const file of payload.files ?? ["f"]) writeFileSync(join(cwd, file), "a\n");
    const before = snapshot(cwd);
    const seen = connections;
    await runBash(commandOf(payload), cwd);
    if (payload.effect === "writes") expect(snapshot(cwd)).not.toBe(before);
    else expect(await connectionAfter(seen, 5_000)).toBe(true);
  });

  it.each(allPayloads)("[$className] the classifier refuses $payload.command", ({ payload }) => {
    const verdict = classifyShellCommand(commandOf(payload));
    expect(verdict.readOnly, verdict.reason).toBe(false);
  });
});
