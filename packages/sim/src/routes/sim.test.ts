import { afterEach, describe, expect, it } from "vitest";
import type { RequestLogEntry } from "../log.js";
import { type Sim, type SimStats, startSim } from "../server.js";
import { post } from "../test-support.js";

let sim: Sim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe("the /v1/sim/ routes", () => {
  it("answer health, totals and the log (the last N, with or without bodies), unlogged and without a key", async () => {
    sim = await startSim();
    const body = { model: "claude-sonnet-4-6", max_tokens: 10, messages: [{ role: "user", content: "hi" }] };
    await post(sim, body);
    await post(sim, body);
    expect(await (await fetch(`${sim.url}/v1/sim/health`)).json()).toEqual({ ok: true });
    const stats = (await (await fetch(`${sim.url}/v1/sim/stats/`)).json()) as SimStats;
    expect(stats).toMatchObject({ requests: 2, messages: 2 });
    const all = (await (await fetch(`${sim.url}/v1/sim/requests`)).json()) as { data: RequestLogEntry[] };
    expect(all.data.map((e) => e.seq)).toEqual([1, 2]);
    expect(all.data[0]!.body).toBe(JSON.stringify(body));
    for (const bodies of ["0", "false"]) {
      const last = (await (await fetch(`${sim.url}/v1/sim/requests?limit=1&bodies=${bodies}`)).json()) as {
        data: RequestLogEntry[];
      };
      expect(last.data.map((e) => [e.seq, e.body])).toEqual([[2, ""]]);
    }
    expect(sim.requests()).toHaveLength(2);
  });

  it("reset forgets the log on POST only; anything else is a 404 in the API's shape", async () => {
    sim = await startSim();
    await post(sim, {
      model: "claude-sonnet-4-6",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
    });
    const get = await fetch(`${sim.url}/v1/sim/reset`);
    expect(get.status).toBe(404);
    expect(await get.json()).toMatchObject({
      type: "error",
      error: { type: "not_found_error", message: "Not found: GET /v1/sim/reset" },
      request_id: get.headers.get("request-id"),
    });
    expect(sim.requests()).toHaveLength(1);
    expect((await fetch(`${sim.url}/v1/sim/reset`, { method: "POST" })).status).toBe(200);
    expect(sim.requests()).toHaveLength(0);
  });
});
