// A file swapped for a symlink between the file tools' confinement check and their open. Runs that
// do not ask for a worktree share the daemon's workspace, so one run's Bash (under `full`, in the
// real sandbox) can swap a path over and over while another run's Read, Grep, Write or Edit works
// on it. The sandbox sees the workspace at the same path as the daemon, so a symlink it makes to
// `/…/outside/private.txt` leads the daemon, which follows it, out of the workspace: the tools
// checked a path and then opened it again by name, following whatever was there by then.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolOutcome } from "@forkd/core";
import { createBuiltinToolDispatcher, type Sandbox } from "@forkd/daemon";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { requireBubblewrap } from "../harness/sandbox.js";

const root = mkdtempSync(join(tmpdir(), "forkd-swap-race-"));
const workspace = join(root, "workspace");
const outside = join(root, "outside");
const PRIVATE = "private-text-outside-the-workspace";
const HARMLESS = "harmless";
/** Calls made before giving up on hitting the window: a run of thousands hits it within a few dozen. */
const MAX_ATTEMPTS = 3000;
let sandbox: Sandbox;

beforeAll(() => {
  sandbox = requireBubblewrap();
  mkdirSync(workspace);
  mkdirSync(outside);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

let stopSwapping: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stopSwapping?.();
  stopSwapping = undefined;
});

/** Perl that swaps `$n` between a regular file and a symlink to `$t`, each swap one atomic rename. */
const SWAP_FILE =
  `symlink($t, "$n.l"); rename("$n.l", $n); ` +
  `open(my $f, ">", "$n.f"); print $f "${HARMLESS}\\n"; close $f; rename("$n.f", $n);`;
/**
 * Perl that exchanges the directory `$n` and a symlink to `$t` (renameat2's RENAME_EXCHANGE, one
 * atomic step each way), so that `$n` is always there, a directory or the symlink.
 */
const SWAP_DIRECTORY =
  `use POSIX; my $nr = (POSIX::uname())[4] eq "aarch64" ? 276 : 316; ` +
  `symlink($t, "$n.l") unless -l "$n.l"; ` +
  `syscall($nr, -100, $n, -100, "$n.l", 2) == 0 or die "renameat2: $!"; ` +
  `syscall($nr, -100, $n, -100, "$n.l", 2) == 0 or die "renameat2: $!";`;

/**
 * Run A: a Bash call that runs `swap` on `name` and `target` over and over until it is aborted.
 * Resolves once the loop runs.
 */
async function startSwapping(name: string, target: string, swap: string): Promise<void> {
  const attacker = createBuiltinToolDispatcher({ workspace, bashPolicy: "full", sandbox });
  const controller = new AbortController();
  const script = `my ($n, $t) = @ARGV; open(my $s, ">", "$n.started"); close $s; while (1) { ${swap} }`;
  const running = attacker.execute(
    { id: "toolu_swap", name: "Bash", input: { command: `perl -e '${script}' ${name} ${target}` } },
    { runId: "run-a", turn: 1, cwd: workspace, signal: controller.signal },
  );
  stopSwapping = async () => {
    controller.abort();
    await running;
  };
  // The loop starts by making `<name>.started`; Reads of it answer once it is there.
  const victim = runB();
  for (let i = 0; i < 1000; i++) {
    const started = await victim("Read", { file_path: `${name}.started` });
    if (started.content.includes("is empty")) return;
    if (!started.content.includes("does not exist")) throw new Error(started.content);
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error("the swapping command never started");
}

/** Run B's tools: the same workspace, no Bash. */
function runB(): (name: string, input: Record<string, unknown>) => Promise<ToolOutcome> {
  const tools = createBuiltinToolDispatcher({ workspace, bashPolicy: "off", sandbox });
  let n = 0;
  return (name, input) =>
    tools.execute(
      { id: `toolu_${++n}`, name, input },
      { runId: "run-b", turn: 1, cwd: workspace, signal: new AbortController().signal },
    );
}

/** What one call saw: the harmless file, the symlink (refused by the check), or neither. */
function seen(outcome: ToolOutcome): "file" | "checked" | "window" {
  if (outcome.content.includes("resolves outside the workspace")) return "checked";
  if (outcome.content.includes("does not exist")) throw new Error(outcome.content);
  if (!outcome.isError) return outcome.content.includes(PRIVATE) ? "window" : "file";
  return "window";
}

/** Makes `name` in the workspace and a file of {@link PRIVATE} outside, and swaps the one for a symlink to the other. */
async function swapWithPrivateFile(name: string): Promise<void> {
  const privateFile = join(outside, `${name}.private`);
  writeFileSync(privateFile, `${PRIVATE}\n`);
  writeFileSync(join(workspace, name), `${HARMLESS}\n`);
  await startSwapping(name, privateFile, SWAP_FILE);
}

describe("a path swapped for a symlink while a file tool opens it", () => {
  it("Read never shows a file outside the workspace", async () => {
    await swapWithPrivateFile("read.txt");
    const call = runB();
    let hit: ToolOutcome | undefined;
    for (let i = 0; i < MAX_ATTEMPTS && hit === undefined; i++) {
      const read = await call("Read", { file_path: "read.txt" });
      if (seen(read) === "window") hit = read;
    }
    expect(hit, "the swap never landed between the check and the open").toBeDefined();
    expect(hit?.content).not.toContain(PRIVATE);
    expect(hit?.content).toMatch(/changed while/);
  });

  it("Grep never searches a file outside the workspace", async () => {
    await swapWithPrivateFile("grep.txt");
    const call = runB();
    let noted: ToolOutcome | undefined;
    for (let i = 0; i < MAX_ATTEMPTS && noted === undefined; i++) {
      const grep = await call("Grep", { pattern: PRIVATE, path: ".", output_mode: "count" });
      expect(grep.content, "Grep found the text of a file outside the workspace").not.toContain("grep.txt:");
      if (grep.content.includes("changed while being opened")) noted = grep;
    }
    expect(noted, "the swap never landed between the walk and the open").toBeDefined();
  });

  it("Write and Edit never change a file outside the workspace", async () => {
    const victim = join(outside, "victim.txt");
    writeFileSync(victim, "original\n");
    writeFileSync(join(workspace, "write.txt"), `${HARMLESS}\n`);
    await startSwapping("write.txt", victim, SWAP_FILE);
    const call = runB();
    let hit: ToolOutcome | undefined;
    for (let i = 0; i < MAX_ATTEMPTS && hit === undefined; i++) {
      const written =
        i % 2 === 0
          ? await call("Write", { file_path: "write.txt", content: "written by the model\n" })
          : await call("Edit", { file_path: "write.txt", old_string: "original", new_string: "edited" });
      if (readFileSync(victim, "utf8") !== "original\n") hit = written;
      else if (written.isError && !/resolves outside|not found|does not exist/.test(written.content)) {
        hit = written;
      }
    }
    expect(hit, "the swap never landed between the check and the open").toBeDefined();
    expect(readFileSync(victim, "utf8")).toBe("original\n");
    expect(hit?.content).toMatch(/changed while/);
  });
});

describe("a directory on the way swapped for a symlink while a file tool opens a file in it", () => {
  it("Read and Write stay inside the workspace", async () => {
    const target = join(outside, "directory");
    mkdirSync(target);
    writeFileSync(join(target, "f.txt"), `${PRIVATE}\n`);
    writeFileSync(join(target, "w.txt"), "original\n");
    mkdirSync(join(workspace, "dir"));
    writeFileSync(join(workspace, "dir", "f.txt"), `${HARMLESS}\n`);
    writeFileSync(join(workspace, "dir", "w.txt"), `${HARMLESS}\n`);
    await startSwapping("dir", target, SWAP_DIRECTORY);
    const call = runB();
    let readHit: ToolOutcome | undefined;
    let writeHit: ToolOutcome | undefined;
    for (let i = 0; i < MAX_ATTEMPTS && (readHit === undefined || writeHit === undefined); i++) {
      const read = await call("Read", { file_path: "dir/f.txt" });
      if (seen(read) === "window") readHit ??= read;
      const written = await call("Write", { file_path: "dir/w.txt", content: "written by the model\n" });
      if (readFileSync(join(target, "w.txt"), "utf8") !== "original\n" || seen(written) === "window") {
        writeHit ??= written;
      }
    }
    expect(readHit, "the swap never landed between the check and Read's open").toBeDefined();
    expect(readHit?.content).not.toContain(PRIVATE);
    expect(readHit?.content).toMatch(/changed while/);
    expect(writeHit, "the swap never landed between the check and Write's open").toBeDefined();
    expect(readFileSync(join(target, "w.txt"), "utf8")).toBe("original\n");
    expect(writeHit?.content).toMatch(/changed while/);
  });
});

describe("a directory swapped for a symlink while Glob or Grep walks into it", () => {
  it("Glob lists no name outside the workspace", async () => {
    const target = join(outside, "listed");
    mkdirSync(target);
    writeFileSync(join(target, "name-outside-the-workspace.txt"), "");
    mkdirSync(join(workspace, "walked"));
    writeFileSync(join(workspace, "walked", "inside.txt"), "");
    await startSwapping("walked", target, SWAP_DIRECTORY);
    const call = runB();
    let noted: ToolOutcome | undefined;
    for (let i = 0; i < MAX_ATTEMPTS && noted === undefined; i++) {
      const glob = await call("Glob", { pattern: "walked*/**" });
      expect(glob.content, "Glob listed a directory outside the workspace").not.toContain("name-outside");
      if (glob.content.includes("changed into a symlink")) noted = glob;
    }
    expect(noted, "the swap never landed between the walk's look and its open").toBeDefined();
  });
});
