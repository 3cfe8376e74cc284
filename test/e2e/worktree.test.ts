// A fork that asks for isolation runs in a git worktree of its own: its writes land on a branch of
// the run, committed, and its result says which commit, while the daemon's checkout is untouched.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { readStoredEvents } from "@forkd/client/internal";
import { createForkPrefix } from "@forkd/core";
import { loadFixture } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

let repo: string;
const git = (...args: string[]) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8" }).trim();

const stack = useForkdStack({
  daemons: ["wt-a"],
  daemonConfig: { tools: { bash: "full" } },
  prepareWorkspace: async (workspace) => {
    repo = workspace;
    git("init", "-q", "-b", "main");
    await writeFile(join(repo, "README.md"), "the parent's checkout\n");
    git("add", "README.md");
    git("-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "initial");
  },
});

describe("worktree isolation", () => {
  it("commits the child's changes on its own branch and reports the commit", async () => {
    const fixture = await loadFixture("4k");
    const { forks, sim } = stack();
    const handle = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive:
        'Leave a note.\n@sim tool Write {"file_path":"notes.txt","content":"written by the fork\\n"}',
      parent: { agent_id: "parent-worktree" },
      isolation: { worktree: true },
    });
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    if (outcome.status !== "completed") return;
    const commit = outcome.result.commit;
    expect(commit).toMatchObject({ branch: `forkd/${handle.runId}`, files_changed: ["notes.txt"] });
    // The commit is on the run's branch; the daemon's own checkout did not change.
    expect(git("rev-parse", commit!.branch)).toBe(commit!.sha);
    expect(git("show", `${commit!.sha}:notes.txt`)).toBe("written by the fork");
    expect(existsSync(join(repo, "notes.txt"))).toBe(false);
    expect(git("status", "--porcelain")).toBe("");
    // The child was told where it works: its directive block carries the worktree notice.
    const events = (await readStoredEvents(forks.resources, handle.runId)).map((logged) => logged.event);
    expect(events.find((event) => event.type === "tool.result")).toMatchObject({
      name: "Write",
      is_error: false,
    });
    const request = JSON.parse(String(sim.requests().at(-2)!.body)) as {
      messages: { content: { text?: string }[] }[];
    };
    const directive = request.messages.at(-1)!.content.at(-1)!.text!;
    expect(directive).toContain(repo);
    expect(directive).toMatch(/worktree/i);
  });
});
