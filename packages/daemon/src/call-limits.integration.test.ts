// The call limits of two daemons sharing one real nats-server: a limit is reached at N and not passed
// at N + 1, a tenant's limit spans its daemons and not other tenants, and a call aborted while it
// waits for its second scope gives back the slot of its first (no slot leaks, no deadlock).
import { ensureForkResources, type ForkResources } from "@forkd/client";
import type { LlmClient, LlmRequest, LlmResponse } from "@forkd/core";
import { callSlotsCodec } from "@forkd/protocol";
import { type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CallLimitSettings, CallLimits } from "./call-limits.js";
import { createDaemonLogger } from "./logger.js";

let server: NatsServerHandle;
const connections: NatsConnection[] = [];
const limits: CallLimits[] = [];
let resources: ForkResources;

beforeAll(async () => {
  server = await startNatsServer();
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  resources = await ensureForkResources(nc, { prefix: "limits" });
});

afterAll(async () => {
  for (const limit of limits) limit.close();
  await Promise.all(connections.map((nc) => nc.close()));
  await server?.stop();
});

/** A daemon's limits on a connection of its own. */
async function daemonLimits(
  daemonId: string,
  settings: CallLimitSettings,
  idleWatchMs?: number,
): Promise<CallLimits> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const own = await ensureForkResources(nc, { prefix: "limits" });
  const callLimits = new CallLimits({
    kv: own.daemons,
    daemonId,
    logger: createDaemonLogger({ level: "silent", format: "json", daemonId }),
    settings,
    keyIdOf: (api) => (api === "anthropic" ? "k1" : undefined),
    idleWatchMs,
  });
  limits.push(callLimits);
  return callLimits;
}

/** A model whose calls run until the test ends them: `started` lists the calls under way. */
function heldModel() {
  const started: { request: LlmRequest; finish: () => void }[] = [];
  const llm: LlmClient = {
    createMessage: (request, options) =>
      new Promise<LlmResponse>((resolve, reject) => {
        options?.signal?.addEventListener("abort", () => reject(options.signal!.reason), { once: true });
        started.push({ request, finish: () => resolve({} as LlmResponse) });
      }),
  };
  return { llm, started };
}

function request(model: string, marker: string): LlmRequest {
  return { model, max_tokens: 10, messages: [{ role: "user", content: marker }] } as LlmRequest;
}

async function entry(key: string) {
  const stored = await resources.daemons.get(key);
  return stored?.operation === "PUT" && stored.length > 0 ? callSlotsCodec.decode(stored.value) : undefined;
}

describe("CallLimits on a real nats-server", () => {
  it("gives N calls their slots at once and makes call N + 1 wait for the first release", async () => {
    const settings = { perKey: 2, tenant: "t-boundary" };
    const a = await daemonLimits("bound-a", settings);
    const b = await daemonLimits("bound-b", settings);
    const model = heldModel();
    const first = a.wrap(model.llm, { api: "anthropic", parent: "p" }).createMessage(request("m", "1"));
    const second = b.wrap(model.llm, { api: "anthropic", parent: "p" }).createMessage(request("m", "2"));
    await waitFor(() => model.started.length === 2);
    const third = a.wrap(model.llm, { api: "anthropic", parent: "p" }).createMessage(request("m", "3"));
    await waitFor(async () => (await entry("limit.key.k1"))?.waiters.length === 1);
    expect(model.started).toHaveLength(2);
    model.started[1]!.finish();
    await waitFor(() => model.started.length === 3);
    expect(model.started[2]!.request.messages[0]!.content).toBe("3");
    model.started[0]!.finish();
    model.started[2]!.finish();
    await Promise.all([first, second, third]);
    await waitFor(async () => (await entry("limit.key.k1"))?.holders.length === 0);
  });

  it("counts a tenant's calls on every daemon and model, and another tenant's apart", async () => {
    const a = await daemonLimits("tenant-a", { perTenant: 1, tenant: "acme" });
    const b = await daemonLimits("tenant-b", { perTenant: 1, tenant: "acme" });
    const other = await daemonLimits("tenant-c", { perTenant: 1, tenant: "other co." });
    const model = heldModel();
    const first = a.wrap(model.llm, { api: "anthropic", parent: "p" }).createMessage(request("m1", "a"));
    await waitFor(() => model.started.length === 1);
    const second = b.wrap(model.llm, { api: "openai-chat", parent: "q" }).createMessage(request("m2", "b"));
    await waitFor(async () => (await entry("limit.tenant.acme"))?.waiters.length === 1);
    const third = other.wrap(model.llm, { api: "anthropic", parent: "p" }).createMessage(request("m1", "c"));
    await waitFor(() => model.started.length === 2);
    expect(model.started.map((call) => call.request.messages[0]!.content)).toEqual(["a", "c"]);
    expect((await entry("limit.tenant.other=0020co=002e"))?.scope).toBe("tenant:other co.");
    model.started[0]!.finish();
    await waitFor(() => model.started.length === 3);
    for (const call of model.started.slice(1)) call.finish();
    await Promise.all([first, second, third]);
  });

  it("gives back the first scope's slot of a call aborted while it waits for its second", async () => {
    const a = await daemonLimits("order-a", { perKey: 2, perModel: 1, tenant: "t-order" });
    expect(a.scopesOf("anthropic", "m").map((scope) => scope.scope)).toEqual(["key:k1", "model:m"]);
    const model = heldModel();
    const wrapped = a.wrap(model.llm, { api: "anthropic", parent: "p", runId: "run-1" });
    const first = wrapped.createMessage(request("m", "1"));
    await waitFor(() => model.started.length === 1);
    const aborter = new AbortController();
    const second = wrapped.createMessage(request("m", "2"), { signal: aborter.signal });
    const waiting = await waitFor(async () => (await entry("limit.model.m"))?.waiters[0]);
    expect(waiting.run_id).toBe("run-1");
    expect((await entry("limit.key.k1"))?.holders).toHaveLength(2); // the waiter holds its key slot
    aborter.abort(new Error("stopped"));
    await expect(second).rejects.toThrow("stopped");
    await waitFor(async () => (await entry("limit.key.k1"))?.holders.length === 1);
    expect((await entry("limit.model.m"))?.waiters).toEqual([]);
    // The key slot it gave back is free for a call of another model.
    const third = wrapped.createMessage(request("n", "3"));
    await waitFor(() => model.started.length === 2);
    for (const call of model.started) call.finish();
    await Promise.all([first, third]);
  });

  it("keeps no watch on the server for a scope gone idle", async () => {
    const a = await daemonLimits("idle-a", { perModel: 1, tenant: "t-idle" }, 300);
    const model = heldModel();
    const call = a.wrap(model.llm, { api: "anthropic", parent: "p" }).createMessage(request("idle", "1"));
    // Consumers bound to a subscriber: the server forgets an unbound ordered consumer only after its
    // inactive threshold (5 min), but it delivers nothing to anyone from the moment it is unbound.
    const watchers = async () => {
      let count = 0;
      for await (const info of resources.jsm.consumers.list(`KV_${resources.subjects.buckets.daemons}`))
        if (info.config.filter_subject?.endsWith(".limit.model.idle") && info.push_bound === true) count += 1;
      return count;
    };
    await waitFor(async () => (await watchers()) === 1);
    await waitFor(() => model.started.length === 1);
    model.started[0]!.finish();
    await call;
    await waitFor(async () => (await watchers()) === 0);
  });
});
