// Inline specs as the subagent publishes them, read back from a real nats-server's specs stream.
import { createForkPrefix } from "@forkd/core";
import { type ForkPrefix, forkSpecCodec, ProtocolError } from "@forkd/protocol";
import { loadFixture, type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsForkSubagent } from "./nats-fork-subagent.js";

let server: NatsServerHandle;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let prefix: ForkPrefix;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc, { prefixTransport: "inline" });
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
});

afterAll(async () => {
  await forks?.close();
  await nc?.close();
  await server?.stop();
});

describe("inline specs", () => {
  it("stores every sibling's spec with the whole prefix and its own fields", async () => {
    const directives = ["First sibling.", "Second sibling.", "Third sibling."];
    const handles = directives.map((directive) =>
      forks.fork({ prefix, directive, parent: { agent_id: "parent-1" }, label: `"${directive}"` }),
    );
    await Promise.all(handles.map((handle) => handle.published()));
    for (const [index, handle] of handles.entries()) {
      const stored = await forks.resources.jsm.streams.getMessage(forks.resources.subjects.streams.specs, {
        last_by_subj: forks.resources.subjects.spec(handle.runId),
      });
      const spec = forkSpecCodec.decode(stored!.data);
      expect(spec.run_id).toBe(handle.runId);
      expect(spec.directive).toBe(directives[index]);
      expect(spec.label).toBe(`"${directives[index]}"`);
      expect(spec.prefix).toEqual({ kind: "inline", prefix: JSON.parse(JSON.stringify(prefix)) });
    }
  });

  it("marks a run id it made as fresh, and not one the caller gave (a resubmission must be claimed first)", async () => {
    const made = forks.fork({ prefix, directive: "A new run.", parent: { agent_id: "parent-1" } });
    const given = forks.fork({
      prefix,
      directive: "A run id the caller chose.",
      parent: { agent_id: "parent-1" },
      runId: "run-given-by-the-caller-1",
    });
    await Promise.all([made.published(), given.published()]);
    const storedSpec = async (runId: string) =>
      forkSpecCodec.decode(
        (await forks.resources.jsm.streams.getMessage(forks.resources.subjects.streams.specs, {
          last_by_subj: forks.resources.subjects.spec(runId),
        }))!.data,
      );
    expect((await storedSpec(made.runId)).fresh_run_id).toBe(true);
    expect((await storedSpec(given.runId)).fresh_run_id).toBeUndefined();
  });

  it("refuses a prefix that does not validate with the spec codec's error, at its path in the spec", async () => {
    const invalid = {
      ...prefix,
      params: { ...prefix.params, messages: "not a list" },
    } as unknown as ForkPrefix;
    const handle = forks.fork({
      prefix: invalid,
      directive: "Never sent.",
      parent: { agent_id: "parent-1" },
    });
    const error = await handle.published().then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ code: "invalid_spec", path: ["prefix", "prefix", "params", "messages"] });
  });
});
