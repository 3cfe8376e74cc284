// A provider storm under load: 200 runs over 4 daemon processes while the simulator answers a share
// of requests with 429 (retry-after), 529, 500, a connection cut mid-stream or an error event
// mid-stream, and some streams trickle. Every run must end, `completed` or `failed` with a typed
// reason; no tool may run twice; a refused run waits what retry-after said before it asks again.
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";
import { contiguousLog } from "../harness/event-log.js";
import { useFaultParent } from "../harness/fault-parent.js";

const RUNS = 200;
/** What a storm may fail a run with: the provider's refusals, and streams cut or errored mid-way. */
const STORM_CODES = new Set([
  "rate_limited",
  "overloaded",
  "server_error",
  "connection",
  "stream_interrupted",
]);
const stack = useFaultParent("storm", {
  sim: {
    latency: { ttftMs: 20, tokensPerSecond: 2_000 },
    faults: {
      rate: 0.15,
      seed: 7,
      kinds: ["429 retry-after=1", "529", "500", "cut-after=3", "error-after=2"],
    },
  },
});
const daemons: DaemonProcess[] = [];
let ledger: string;

beforeAll(async () => {
  const { server, sim, workspace } = stack();
  ledger = join(workspace, "ledger.txt");
  await writeFile(ledger, "");
  for (let n = 1; n <= 4; n++) {
    daemons.push(
      await spawnDaemon({
        id: `storm-${n}`,
        natsUrls: [server.url],
        simUrl: sim.url,
        workspace,
        concurrency: 16,
        extraEnv: { FORKD_LLM_MAX_RETRIES: "4" },
      }),
    );
  }
});

afterAll(() => stopDaemons(daemons));

const tagOf = (i: number) => `storm-run-${String(i).padStart(3, "0")}`;

describe("a provider storm under load", () => {
  it(`${RUNS} runs over 4 daemons: each ends typed, no tool runs twice, retry-after is waited`, async () => {
    const { forks, prefix, sim } = stack();
    const handles = Array.from({ length: RUNS }, (_, i) =>
      forks.fork({
        prefix,
        parent: { agent_id: "parent-storm" },
        directive: [
          `${tagOf(i)}: record, then report.`,
          `@sim tool Bash {"command":"echo ${tagOf(i)} >> ${ledger}"}`,
          "@sim turn",
          // One run in ten trickles: 20 tokens at 20 a second.
          ...(i % 10 === 0 ? ["@sim tps 20"] : []),
          "@sim text 20",
        ].join("\n"),
      }),
    );
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));

    // Every run ended, completed or failed with a code the client names.
    const statuses = new Map<string, number>();
    for (const outcome of outcomes) {
      statuses.set(outcome.status, (statuses.get(outcome.status) ?? 0) + 1);
      if (outcome.status === "failed")
        expect(STORM_CODES.has(outcome.error.code), outcome.error.code).toBe(true);
      else expect(outcome.status).toBe("completed");
    }
    expect(statuses.get("completed") ?? 0).toBeGreaterThan(RUNS / 2);

    // No tool ran twice.
    const recorded = readFileSync(ledger, "utf8").split("\n").filter(Boolean);
    expect(new Set(recorded).size).toBe(recorded.length);

    // Each log is whole, with one terminal event.
    for (const handle of handles) {
      const events = await contiguousLog(forks.resources, handle.runId);
      expect(events.filter((event) => ["completed", "failed", "aborted"].includes(event.type))).toHaveLength(
        1,
      );
    }

    // A run refused with retry-after=1 asked again no sooner than a second later.
    const log = sim.requests().filter((entry) => entry.path === "/v1/messages");
    const refusals = log.filter((entry) => entry.status === 429);
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) {
      const tag = /storm-run-\d{3}/.exec(refusal.body.slice(-4096))?.[0];
      const next = log.find(
        (entry) => entry.seq > refusal.seq && entry.body.slice(-4096).includes(`${tag}:`),
      );
      if (next) expect(next.receivedAt - refusal.endedAt, tag).toBeGreaterThanOrEqual(990);
    }
  });
});
