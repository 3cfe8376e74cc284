// Parents and observers may subscribe to `_INBOX.>` (their own replies arrive there), and a daemon's
// replies and deliveries arrived there too: every spec it pulled, read back or answered for — with
// the owner's `owner_token`, the group's `group_token` and the tool host's `reply_key` — reached any
// parent listening, which could then abort, stop or steer every run of the account, answer its
// permission requests and stand in for its tool host. A daemon now receives on an inbox prefix of its
// own, which only daemons may read (deploy/nats/accounts.conf).
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { NatsForkSubagent, serveTools } from "@forkd/client";
import { DAEMON_INBOX_PREFIX, PROTOCOL_VERSION } from "@forkd/protocol";
import { newSecret, ownerToken } from "@forkd/protocol/internal";
import { type NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import { beforeAll, describe, expect, it } from "vitest";
import { useDeployedNats } from "../harness/deployed.js";
import { prefixWithParentTool } from "../harness/prefixes.js";

const deployed = useDeployedNats("wire-inbox");

beforeAll(async () => {
  await writeFile(join(deployed().workspace, "README.md"), "the victim's workspace\n");
  await deployed().startDaemon("wire-inbox-daemon");
});

describe("what a daemon receives under deploy/nats/accounts.conf", () => {
  it("no other parent or observer reads a run's owner token or its tool host's key off the inboxes", async () => {
    // Everything the other roles may read: every inbox, the permission and tool-host subjects.
    const snooped: string[] = [];
    const snoopers = [await deployed().connectAs("parent"), await deployed().connectAs("observer")];
    const listen = (nc: NatsConnection, subject: string) =>
      nc.subscribe(subject, {
        callback: (error, message) => {
          if (!error) snooped.push(message.string());
        },
      });
    listen(snoopers[0]!, "_INBOX.>");
    listen(snoopers[0]!, "agent.fork.*.permission");
    listen(snoopers[0]!, "agent.toolhost.>");
    listen(snoopers[1]!, "_INBOX.>");
    // The daemons' own inboxes are refused to both.
    const refusals = snoopers.map(
      (nc) =>
        new Promise<PermissionViolationError>((resolveRefusal) => {
          void (async () => {
            for await (const status of nc.status())
              if (status.type === "error" && status.error instanceof PermissionViolationError)
                resolveRefusal(status.error);
          })();
        }),
    );
    const refused = snoopers.map((nc) => nc.subscribe(`${DAEMON_INBOX_PREFIX}.>`));
    for (const refusal of refusals) expect((await refusal).subject).toBe(`${DAEMON_INBOX_PREFIX}.>`);
    await Promise.allSettled(refused.map((subscription) => subscription.closed));
    await Promise.all(snoopers.map((nc) => nc.flush()));

    // The victim: a run with an owner key, a tool host and a permission request.
    const ownerKey = newSecret();
    const victimNc = await deployed().connectAs("parent");
    const host = serveTools(victimNc, { hostId: "victim-host", tools: { ParentNotes: () => "the notes" } });
    const forks = await NatsForkSubagent.create(victimNc, {
      ownerKey,
      toolHost: host.ref,
      onPermission: () => ({ v: PROTOCOL_VERSION, decision: "allow" }),
    });
    const handle = forks.fork({
      prefix: await prefixWithParentTool("4k", "ParentNotes"),
      directive: [
        "Ask the parent, then write.",
        '@sim tool ParentNotes {"topic":"t"}',
        '@sim tool Write {"file_path":"victim.txt","content":"v"}',
      ].join("\n"),
      parent: { agent_id: "victim" },
      permissions: { mode: "ask", timeout_ms: 20_000 },
    });
    expect((await handle.result()).status).toBe("completed");
    await Promise.all(snoopers.map((nc) => nc.flush()));

    // They heard the run (its requests, their own replies), never its secrets.
    expect(snooped.some((text) => text.includes(handle.runId))).toBe(true);
    const secrets = [ownerToken(ownerKey, handle.runId), host.ref.reply_key!];
    expect(snooped.filter((text) => secrets.some((secret) => text.includes(secret)))).toEqual([]);
    await forks.close();
    await host.stop();
  });
});
