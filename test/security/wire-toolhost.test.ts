// A tool host serves tools that exist where its parent runs: they act there (open an editor, read the
// parent's files). Its subject is `agent.toolhost.<host id>`, and any parent of the account sees the
// id on the wire. A parent that forked a run of its own naming another parent's host id, with that
// host's tool in its prefix, had a daemon call the tool for it with the input its model chose — and,
// naming no reply key, got the result back in its own run's events. The daemon now proves each call
// with the host's reply key, which only the host's own parent's specs carry; a host runs nothing else.
import { NatsForkSubagent, serveTools } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";
import { prefixWithParentTool } from "../harness/prefixes.js";

const stack = useForkdStack();

describe("another parent's tool host", () => {
  it("runs no call of a run its parent did not fork, and the owner's run still calls it", async () => {
    const { nc } = stack();
    const calls: unknown[] = [];
    const host = serveTools(nc, {
      hostId: "victim-host",
      tools: {
        ReadParentFile: (input) => {
          calls.push(input);
          return "the parent's secret notes";
        },
      },
    });
    const prefix = await prefixWithParentTool("4k", "ReadParentFile");
    const directive = 'Read it.\n@sim tool ReadParentFile {"path":"~/.notes"}';

    // The attacker names the victim's host (its id is on the wire), without its reply key.
    const attacker = await NatsForkSubagent.create(nc, {
      toolHost: { id: host.ref.id, tools: host.ref.tools },
    });
    const stolen = attacker.fork({ prefix, directive, parent: { agent_id: "attacker" } });
    expect((await stolen.result()).status).toBe("completed");
    const stolenResult = (await readStoredEvents(attacker.resources, stolen.runId))
      .map((stored) => stored.event)
      .find((event) => event.type === "tool.result");
    expect(stolenResult).toMatchObject({ is_error: true });
    expect(JSON.stringify(stolenResult)).not.toContain("secret notes");
    expect(calls).toEqual([]);

    const owner = await NatsForkSubagent.create(nc, { toolHost: host.ref });
    const own = owner.fork({ prefix, directive, parent: { agent_id: "owner" } });
    expect((await own.result()).status).toBe("completed");
    const ownResult = (await readStoredEvents(owner.resources, own.runId))
      .map((stored) => stored.event)
      .find((event) => event.type === "tool.result");
    expect(ownResult).toMatchObject({ is_error: false, content: "the parent's secret notes" });
    expect(calls).toEqual([{ path: "~/.notes" }]);
    await Promise.all([attacker.close(), owner.close(), host.stop()]);
  });
});
