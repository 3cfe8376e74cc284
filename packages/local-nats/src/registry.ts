// Every server process and temp dir the harness starts is tracked here, so global teardown can stop
// them all and a crashed test run leaves no nats-server behind.
import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";

/** Something {@link stopAllNatsServers} stops. */
interface Stoppable {
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
const stoppables = new Set<Stoppable>();
let exitHookInstalled = false;

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

// 'exit' handlers must be synchronous: SIGKILL what is left and remove the temp dirs.
function onProcessExit(): void {
  for (const child of children) {
    if (isRunning(child)) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort at exit
    }
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", onProcessExit);
}

/** Tracks a spawned child until it exits. @internal */
export function trackChild(child: ChildProcess): void {
  installExitHook();
  children.add(child);
  child.once("exit", () => children.delete(child));
  child.once("error", () => {
    if (!isRunning(child) || child.pid === undefined) children.delete(child);
  });
}

/** Tracks a temp dir until {@link untrackTempDir}. @internal */
export function trackTempDir(dir: string): void {
  installExitHook();
  tempDirs.add(dir);
}

/** Forgets a temp dir (after it was removed). @internal */
export function untrackTempDir(dir: string): void {
  tempDirs.delete(dir);
}

/** Registers a server or cluster for {@link stopAllNatsServers}. @internal */
export function trackStoppable(stoppable: Stoppable): void {
  stoppables.add(stoppable);
}

/** Unregisters a stopped server or cluster. @internal */
export function untrackStoppable(stoppable: Stoppable): void {
  stoppables.delete(stoppable);
}

/** How many server processes the harness started are still running. For leak assertions in tests. */
export function runningNatsServerCount(): number {
  let count = 0;
  for (const child of children) if (isRunning(child)) count += 1;
  return count;
}

/**
 * Stops every server and cluster this process started and has not stopped yet, and removes their
 * temp dirs. For a global teardown (`afterAll`, vitest `globalSetup`'s teardown). Never throws:
 * failures to stop one server do not keep the others running.
 */
export async function stopAllNatsServers(): Promise<void> {
  await Promise.allSettled([...stoppables].map((stoppable) => stoppable.stop()));
  for (const child of children) {
    if (isRunning(child)) child.kill("SIGKILL");
  }
}
