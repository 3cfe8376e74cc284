// The shared backoff: LocalThrottle's holds, and two clients sharing one throttle against the
// simulator over real HTTP — a 429 seen by one holds the other's next request for what it named.
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AnthropicLlmClient } from "./anthropic-client.js";
import { LocalThrottle, MAX_THROTTLE_MS } from "./throttle.js";

describe("LocalThrottle", () => {
  it("holds a model until the latest time reported, and no other model", () => {
    let now = 1_000;
    const throttle = new LocalThrottle(() => now);
    expect(throttle.heldUntil("m")).toBeUndefined();
    throttle.report("m", 3_000);
    throttle.report("m", 2_000); // an earlier end does not shorten the hold
    expect(throttle.heldUntil("m")).toBe(3_000);
    expect(throttle.heldUntil("other")).toBeUndefined();
    now = 2_999;
    expect(throttle.heldUntil("m")).toBe(3_000);
    now = 3_000;
    expect(throttle.heldUntil("m")).toBeUndefined();
  });

  it("holds for MAX_THROTTLE_MS at most, whatever a report says", () => {
    const throttle = new LocalThrottle(() => 0);
    throttle.report("m", 10 * MAX_THROTTLE_MS);
    expect(throttle.heldUntil("m")).toBe(MAX_THROTTLE_MS);
  });

  it("lets a waiting caller go at the end of the hold, and stops waiting on abort", async () => {
    const throttle = new LocalThrottle();
    throttle.report("m", Date.now() + 150);
    const started = Date.now();
    await throttle.clearance("m");
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    throttle.report("m", Date.now() + 60_000);
    const controller = new AbortController();
    const waiting = throttle.clearance("m", controller.signal);
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: "aborted" });
  });
});

describe("two clients sharing a throttle, against the simulator", () => {
  let sim: Sim;
  beforeAll(async () => {
    sim = await startSim({ port: 0 });
  });
  afterAll(async () => {
    await sim.close();
  });

  const request = (text: string) => ({
    model: "claude-sonnet-5-5",
    max_tokens: 256,
    messages: [{ role: "user" as const, content: [{ type: "text" as const, text }] }],
  });

  it("a 429 with retry-after seen by one holds the other's request until then", async () => {
    const throttle = new LocalThrottle();
    const make = () =>
      new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-shared", throttle, retry: { maxRetries: 2 } });
    const [first, second] = [make(), make()];
    const refused = sim.next("request", { filter: (entry) => entry.status === 429 });
    let retrying!: () => void;
    const firstRetries = new Promise<void>((resolve) => {
      retrying = resolve;
    });
    const firstCall = first.createMessage(request("One.\n@sim fault-once 429 retry-after=1\n@sim say one"), {
      onEvent: (event) => {
        if (event.type === "retry") retrying();
      },
    });
    const refusedAt = (await refused).endedAt;
    // Once the first client has taken the 429 in (its retry event), a request of the second waits.
    await firstRetries;
    const secondCall = second.createMessage(request("Two.\n@sim say two"));
    const answered = sim.next("request", {
      filter: (entry) => entry.status === 200 && entry.body.includes("Two."),
    });
    await Promise.all([firstCall, secondCall]);
    // The second client sent nothing before the second the provider named had passed.
    expect((await answered).receivedAt - refusedAt).toBeGreaterThanOrEqual(900);
  });

  it("without a shared throttle the other client goes at once (the baseline the test above beats)", async () => {
    const alone = () =>
      new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-alone", retry: { maxRetries: 2 } });
    const refused = sim.next("request", { filter: (entry) => entry.status === 429 });
    const firstCall = alone().createMessage(
      request("Three.\n@sim fault-once 429 retry-after=1\n@sim say three"),
    );
    const refusedAt = (await refused).endedAt;
    const answered = sim.next("request", {
      filter: (entry) => entry.status === 200 && entry.body.includes("Four."),
    });
    const secondCall = alone().createMessage(request("Four.\n@sim say four"));
    await Promise.all([firstCall, secondCall]);
    expect((await answered).receivedAt - refusedAt).toBeLessThan(900);
  });
});
