// The client commands against a real cluster of one: a nats-server, the simulator, and a daemon
// started as `forkd daemon` (a process). fork --json, fork --no-wait, ps --json, abort, watch.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parentIndexKey } from "@forkd/client";
import { forkSubjects, queuedRunState, runStateCodec } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { fixturePath, waitFor } from "@forkd/testing";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useNatsServer } from "../harness/nats.js";
import { type CliProcess, cleanEnv, FORKD_BIN, ndjson, proxyCliArgs, runCli, spawnCli } from "./support.js";

const nats = useNatsServer();
const TURN = fixturePath("4k");
const DAEMON_ID = "cli-e2e-1";
let sim: Sim;
let workspace: string;
let daemon: CliProcess;
const started: CliProcess[] = [];

const natsArgs = () => ["--nats", nats().url];
/** `forkd fork` from the 4k turn with these directives (and more flags). */
const forkArgs = (directives: string[], ...flags: string[]) => [
  "fork",
  ...natsArgs(),
  "--from",
  TURN,
  ...directives.flatMap((directive) => ["--directive", directive]),
  ...flags,
];

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  workspace = await mkdtemp(join(tmpdir(), "forkd-cli-e2e-"));
  daemon = spawnCli(
    [
      "daemon",
      ...natsArgs(),
      "--id",
      DAEMON_ID,
      "--workspace",
      workspace,
      "--heartbeat",
      "500",
      "--log-format",
      "json",
    ],
    {
      env: cleanEnv({
        ANTHROPIC_BASE_URL: sim.url,
        ANTHROPIC_API_KEY: "sk-cli-e2e",
        OPENAI_BASE_URL: `${sim.url}/v1`,
        OPENAI_API_KEY: "sk-cli-e2e",
        GOOGLE_GEMINI_BASE_URL: sim.url,
        GEMINI_API_KEY: "gm-cli-e2e",
        FORKD_LLM_MAX_RETRIES: "0",
      }),
    },
  );
  started.push(daemon);
  // Its pino logs are JSON lines on stderr (--log-format json).
  const running = await daemon.waitForLine((line) => line.includes('"msg":"daemon running"'), {
    stream: "stderr",
  });
  expect(JSON.parse(running)).toMatchObject({ level: 30, daemon: DAEMON_ID });
});

afterAll(async () => {
  await Promise.all(started.map((cli) => cli.stop("SIGKILL")));
  await sim?.close();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

let finishedRunIds: string[] = [];
let finishedEvents: Record<string, unknown>[] = [];

describe("forkd fork, ps, watch and abort against a daemon process", () => {
  it("fork --json prints every event and ends with a result per child", async () => {
    const result = await runCli(forkArgs(["Summarise the codec.", "List the tests."], "--json"));
    expect(result.code, result.stderr).toBe(0);
    const lines = ndjson(result.stdout);
    expect(lines.every((line) => line.kind === "event" || line.kind === "result")).toBe(true);
    const results = lines.slice(-2);
    expect(results.map((line) => [line.kind, line.child, line.status])).toEqual([
      ["result", 1, "completed"],
      ["result", 2, "completed"],
    ]);
    expect(String(results[0]!.notification)).toMatch(
      /^<task-notification>[\s\S]*<status>completed<\/status>/,
    );
    finishedRunIds = results.map((line) => String(line.run_id));
    for (const [i, runId] of finishedRunIds.entries()) {
      const events = lines.filter((line) => line.kind === "event" && line.run_id === runId);
      expect(events.every((event) => event.child === i + 1)).toBe(true);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      expect(events.at(-1)!.type).toBe("completed");
      expect(events[0]).toMatchObject({ type: "accepted", daemon_id: DAEMON_ID });
    }
    finishedEvents = lines.filter((line) => line.kind === "event" && line.run_id === finishedRunIds[0]);
  });

  it("ps --json lists the daemon and the runs", async () => {
    type Registry = {
      daemons: { daemon_id: string; state: string; capacity: number }[];
      runs: { run_id: string; status: string; daemon_id: string; usage?: { cost_usd: number } }[];
    };
    // The registry records a run's end just after its terminal event: ask again until it shows.
    const registry = await waitFor(async () => {
      const result = await runCli(["ps", "--json", ...natsArgs()]);
      expect(result.code, result.stderr).toBe(0);
      const read = JSON.parse(result.stdout) as Registry;
      const ended = finishedRunIds.every((runId) =>
        read.runs.some((run) => run.run_id === runId && run.status === "completed"),
      );
      return ended ? read : undefined;
    });
    expect(registry.daemons).toContainEqual(
      expect.objectContaining({ daemon_id: DAEMON_ID, state: "running" }),
    );
    for (const runId of finishedRunIds) {
      expect(registry.runs).toContainEqual(
        expect.objectContaining({ run_id: runId, status: "completed", daemon_id: DAEMON_ID }),
      );
    }
  });

  it("ps prints aligned tables", async () => {
    const result = await runCli(["ps", ...natsArgs()]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^DAEMONS \(1\)\n {2}ID\s+HOST\s+LOAD\s+STATE\s+VERSION\s+HEARTBEAT\n {2}cli-e2e-1\s/,
    );
    expect(result.stdout).toMatch(
      /^RUNS \(\d+\)[^\n]*\n {2}RUN ID\s+STATUS\s+ATTEMPT\s+DAEMON\s+LABEL\s+AGE\s+TOKENS\s+COST$/m,
    );
    for (const runId of finishedRunIds)
      expect(result.stdout).toMatch(new RegExp(`^  ${runId}\\s+completed\\s+1\\s+${DAEMON_ID}\\s`, "m"));
  });

  it("watch RUN_ID --json replays a finished run completely and exits", async () => {
    const result = await runCli(["watch", finishedRunIds[0]!, "--json", ...natsArgs()]);
    expect(result.code, result.stderr).toBe(0);
    const events = ndjson(result.stdout);
    const { child: _, ...first } = finishedEvents[0]!;
    expect(events[0]).toEqual(first);
    expect(events.map((event) => [event.seq, event.type])).toEqual(
      finishedEvents.map((event) => [event.seq, event.type]),
    );
  });

  it("watch RUN_ID prints one line per event when not on a terminal", async () => {
    const result = await runCli(["watch", finishedRunIds[1]!, ...natsArgs()]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} ${finishedRunIds[1]} #1 accepted by ${DAEMON_ID} `),
    );
    expect(lines.at(-1)).toMatch(/ completed 1 turn, 0 tool uses, /);
  });

  it("watch and abort say so when the run does not exist: exit 4", async () => {
    for (const command of ["watch", "abort"]) {
      const result = await runCli([command, "no-such-run", ...natsArgs()]);
      expect(result.code).toBe(4);
      expect(result.stderr.trim()).toBe(
        `forkd ${command}: no run no-such-run in the registry or the event log`,
      );
    }
  });

  it("abort ends a running run as killed", async () => {
    const fork = spawnCli(forkArgs(["Write a long essay.\n@sim tps 5\n@sim text 1000"], "--json"));
    started.push(fork);
    const delta = JSON.parse(await fork.waitForLine((line) => line.includes('"type":"llm.delta"'))) as {
      run_id: string;
    };
    const abort = await runCli(["abort", delta.run_id, "--reason", "changed my mind", ...natsArgs()]);
    expect(abort.code, abort.stderr).toBe(0);
    expect(abort.stdout).toContain(`abort sent to run ${delta.run_id} (running): changed my mind`);
    expect(abort.stdout).toMatch(
      new RegExp(`run ${delta.run_id} ended after \\d+(ms|\\.\\ds): killed: changed my mind`),
    );
    const { code } = await fork.exited;
    expect(code).toBe(1);
    const last = ndjson(fork.stdout()).at(-1)!;
    expect(last).toMatchObject({ kind: "result", run_id: delta.run_id, status: "killed" });
    const again = await runCli(["abort", delta.run_id, ...natsArgs()]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/had already ended: aborted changed my mind/);
  });

  it("abort --parent ends every run of the parent; steer and budget say what they did", async () => {
    const parent = `cli-cascade-${Date.now()}`;
    const launch = await runCli(
      forkArgs(
        ["Slow one.\n@sim tps 5\n@sim text 1000", "Slow two.\n@sim tps 5\n@sim text 1000"],
        "--no-wait",
        "--parent-id",
        parent,
      ),
    );
    expect(launch.code, launch.stderr).toBe(0);
    const group = /group (\S+) \(forkd abort --group/.exec(launch.stdout)?.[1];
    expect(group).toBeDefined();
    const budget = await runCli(["budget", group!, "--usd", "5", ...natsArgs()]);
    expect(budget.code, budget.stderr).toBe(0);
    expect(budget.stdout).toMatch(
      new RegExp(
        `^group ${group}: \\$\\d+\\.\\d{4} of \\$5( \\(\\+\\$\\d+\\.\\d{4} reserved\\))? \\(cap version 1\\)`,
      ),
    );
    const ps = await runCli(["ps", "--parent", parent, ...natsArgs()]);
    expect(ps.code, ps.stderr).toBe(0);
    expect(ps.stdout).toMatch(
      new RegExp(
        `^GROUPS \\(1\\)\\n {2}GROUP ID\\s+RUNS\\s+BUDGET\\n {2}${group}\\s+.*\\$\\d+\\.\\d{4} of \\$5( \\(\\+\\$\\d+\\.\\d{4} reserved\\))?$`,
        "m",
      ),
    );
    const abort = await runCli(["abort", "--parent", parent, "--reason", "cascade", ...natsArgs()]);
    expect(abort.code, abort.stderr).toBe(0);
    expect(abort.stdout).toContain(`abort sent to 2 runs of parent ${parent}: cascade`);
    expect(abort.stdout).toMatch(/2 of 2 ended after \S+: 2 killed/);
    const runId = /child 1: run (\S+)/.exec(launch.stdout)![1]!;
    const steer = await runCli(["steer", runId, "too late", ...natsArgs()]);
    expect(steer.code).toBe(4);
    expect(steer.stderr).toContain(`no daemon runs ${runId} now`);
  });

  it("Ctrl-C on fork aborts its unfinished children and exits 130", async () => {
    const fork = spawnCli(forkArgs(["Slow.\n@sim tps 5\n@sim text 1000"], "--json"));
    started.push(fork);
    const delta = JSON.parse(await fork.waitForLine((line) => line.includes('"type":"llm.delta"'))) as {
      run_id: string;
    };
    expect(await fork.stop("SIGINT")).toEqual({ code: 130, signal: null });
    expect(fork.stderr()).toContain("interrupted: sent an abort to 1 unfinished child");
    const watch = await runCli(["watch", delta.run_id, "--json", ...natsArgs()]);
    expect(watch.code).toBe(1);
    expect(ndjson(watch.stdout).at(-1)).toMatchObject({
      type: "aborted",
      reason: "forkd fork was interrupted",
    });
  });

  it("fork --no-wait prints the run ids once published; the runs complete without it", async () => {
    const result = await runCli(forkArgs(["One.", "Two."], "--label", "nowait", "--no-wait", "--json"));
    expect(result.code, result.stderr).toBe(0);
    const launched = ndjson(result.stdout);
    expect(launched.map((line) => [line.kind, line.child, line.label])).toEqual([
      ["launched", 1, "nowait 1"],
      ["launched", 2, "nowait 2"],
    ]);
    for (const line of launched) {
      const watch = await runCli(["watch", String(line.run_id), "--json", ...natsArgs()]);
      expect(watch.code, watch.stderr).toBe(0);
      expect(ndjson(watch.stdout).at(-1)).toMatchObject({ type: "completed" });
    }
  });

  it("watch (all runs) replays every run and stops on Ctrl-C with exit 0", async () => {
    const watch = spawnCli(["watch", "--json", ...natsArgs()]);
    started.push(watch);
    for (const runId of finishedRunIds) {
      await watch.waitForLine(
        (line) => line.includes(`"run_id":"${runId}"`) && line.includes('"type":"completed"'),
      );
    }
    expect(await watch.stop("SIGINT")).toEqual({ code: 0, signal: null });
    const events = ndjson(watch.stdout());
    expect(events.every((event) => event.kind === "event")).toBe(true);
    const first = events.filter((event) => event.run_id === finishedRunIds[0]);
    expect(first.map((event) => event.seq)).toEqual(finishedEvents.map((event) => event.seq));
  });

  it("fork without --directive forks the children the reply's tool calls ask for, and prints their results", async () => {
    const result = await runCli(forkArgs([]));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^forking 2 children from .*parent-turn-4k\.json \(~[\d,]+ tokens, claude-sonnet-4-6\)/,
    );
    expect(result.stdout).toMatch(/ child 1 #1 accepted by cli-e2e-1 /);
    expect(result.stdout).toMatch(/^child 1 {2}slice 1 {2}completed {2}run [\w-]+$/m);
    expect(result.stdout).toMatch(/^child 2 {2}slice 2 {2}completed {2}run [\w-]+$/m);
    expect(result.stdout).toMatch(/^2 of 2 children completed; [\d,]+ tokens, \$\d+\.\d{4}$/m);
  });

  it("a fork with --max-turns 0 and a label shows up in ps as that label", async () => {
    const result = await runCli(forkArgs(["Nothing."], "--label", "zero", "--max-turns", "0", "--json"));
    const last = ndjson(result.stdout).at(-1)!;
    expect(last).toMatchObject({ kind: "result", label: "zero" });
    const listed = await runCli(["ps", "--json", ...natsArgs()]);
    // Once seen with empty stdout: the exit code and stderr say why, should it happen again.
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: "" });
    const ps = JSON.parse(listed.stdout) as { runs: { run_id: string; label?: string }[] };
    expect(ps.runs.find((run) => run.run_id === last.run_id)?.label).toBe("zero");
  });

  it("ps --all --json through a pipe whose reader is slow is whole: 10,000 runs, far past the pipe's 64 KiB", async () => {
    // 10,000 registered runs make megabytes of JSON. Into a pipe stdout is written asynchronously,
    // and a CLI that exited before it drained was cut at exactly 65,536 bytes (`forkd ps --json | jq`).
    await seedRuns();
    const ps = `"${process.execPath}" "${FORKD_BIN}" ps --all --json --nats ${nats().url}`;
    const piped = await shell(`${ps} | (sleep 0.5; cat)`);
    expect(piped.code).toBe(0);
    expect(piped.stdout.length).toBeGreaterThan(1_000_000);
    const parsed = JSON.parse(piped.stdout) as { runs: { run_id: string }[] };
    expect(parsed.runs.filter((run) => run.run_id.startsWith("bulk-"))).toHaveLength(BULK_RUNS);
    // Into a file it is whole too, and the exit code is the command's.
    const file = join(workspace, "ps.json");
    const redirected = await shell(`${ps} > "${file}"; echo "exit $?"`);
    expect(redirected.stdout).toBe("exit 0\n");
    const stored = JSON.parse(await readFile(file, "utf8")) as { runs: { run_id: string }[] };
    expect(stored.runs).toEqual(parsed.runs);
    const refused = await shell(
      `"${process.execPath}" "${FORKD_BIN}" ps --all --json --nats nats://127.0.0.1:1 > /dev/null 2>&1; echo "exit $?"`,
    );
    expect(refused.stdout).toBe("exit 3\n");
  });

  it("ps without --all shows the live runs and the newest written, not the 10,000 stored; --parent lists one parent's", async () => {
    await seedRuns();
    const result = await runCli(["ps", "--json", ...natsArgs()]);
    expect(result.code, result.stderr).toBe(0);
    const listed = JSON.parse(result.stdout) as { runs: { run_id: string }[] };
    expect(listed.runs.length).toBeLessThanOrEqual(50);
    expect(listed.runs.map((run) => run.run_id)).toContain(`bulk-${BULK_RUNS - 1}`);
    const ofParent = await runCli(["ps", "--json", "--parent", "bulk-parent-7", ...natsArgs()]);
    expect(ofParent.code, ofParent.stderr).toBe(0);
    const runIds = (JSON.parse(ofParent.stdout) as { runs: { run_id: string }[] }).runs.map(
      (run) => run.run_id,
    );
    expect(runIds.sort()).toEqual(
      Array.from({ length: BULK_RUNS / 100 }, (_, i) => `bulk-${i * 100 + 7}`).sort(),
    );
  });
});

const BULK_RUNS = 10_000;
let seeding: Promise<void> | undefined;

/** Registers 10,000 finished runs straight into the registry (once per file), each with a parent index key. */
function seedRuns(): Promise<void> {
  seeding ??= (async () => {
    const nc = await connect({ servers: nats().url });
    try {
      const runs = await new Kvm(nc).open(forkSubjects().buckets.runs);
      const now = Date.now();
      for (let start = 0; start < BULK_RUNS; start += 500) {
        await Promise.all(
          Array.from({ length: 500 }, async (_, offset) => {
            const i = start + offset;
            const runId = `bulk-${i}`;
            const parent = `bulk-parent-${i % 100}`;
            const queued = queuedRunState({
              runId,
              createdAt: now + i,
              now,
              label: `bulk ${i}`,
              parentAgentId: parent,
            });
            await runs.put(parentIndexKey(parent, runId), new Uint8Array(0));
            await runs.put(runId, runStateCodec.encode({ ...queued, status: "completed", ended_at: now }));
          }),
        );
      }
    } finally {
      await nc.close();
    }
  })();
  return seeding;
}

/** Runs `command` with sh and collects its stdout. */
function shell(command: string): Promise<{ stdout: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", command], { env: cleanEnv(), stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      text += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ stdout: text, code }));
  });
}

// An agent on another API (qwen-code, the Codex CLI, the Gemini CLI) through `forkd capture`: the
// file it writes is forked from as it is, and the child's request starts with the parent's bytes.
describe("forkd capture, then forkd fork --from, for a turn of another API", () => {
  const FORK_PROMPT = 'Audit the codec.\n@sim tool fork {"directive":"Audit the length checks."}';
  const cases = [
    {
      api: "openai-chat",
      path: "/openai/chat/completions",
      body: {
        model: "gpt-5",
        messages: [{ role: "user", content: FORK_PROMPT }],
        tools: [{ type: "function", function: { name: "fork", parameters: { type: "object" } } }],
      },
      simPath: "/v1/chat/completions",
      list: "messages",
    },
    {
      // The Codex CLI's API: its reply is a list of items (the reasoning item first).
      api: "openai-responses",
      path: "/openai/responses",
      body: {
        model: "gpt-5",
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: FORK_PROMPT }] }],
        tools: [{ type: "function", name: "fork", parameters: { type: "object" } }],
      },
      simPath: "/v1/responses",
      list: "input",
    },
    {
      api: "gemini",
      path: "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
      body: {
        contents: [{ role: "user", parts: [{ text: FORK_PROMPT }] }],
        tools: [{ functionDeclarations: [{ name: "fork", parameters: { type: "object" } }] }],
      },
      simPath: "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
      list: "contents",
    },
  ] as const;

  for (const test of cases) {
    it(`${test.api}: the captured file forks a child from the reply's fork call, on the parent's bytes`, async () => {
      const out = await mkdtemp(join(tmpdir(), "forkd-capture-native-"));
      const capture = spawnCli(["capture", out, ...proxyCliArgs(sim.url, join(out, "capture.json"))]);
      started.push(capture);
      try {
        const url = await capture.waitForLine((line) => line.startsWith("http://"));
        const answer = await fetch(`${url}${test.path}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: "Bearer sk-cli-e2e",
            "x-goog-api-key": "gm-cli-e2e",
          },
          body: JSON.stringify(test.body),
        });
        expect(answer.status).toBe(200);
        await answer.text();
        const path = await capture.waitForLine((line) => line.endsWith(".json"));
        const file = JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>;
        expect(Object.keys(file)).toEqual(["api", "path", "request", "response"]);
        expect(file.api).toBe(test.api);

        const before = sim.requests().length;
        const result = await runCli(["fork", ...natsArgs(), "--from", path, "--json"]);
        expect(result.code, result.stderr).toBe(0);
        expect(ndjson(result.stdout).at(-1)).toMatchObject({ kind: "result", status: "completed" });
        const child = sim
          .requests()
          .slice(before)
          .find((entry) => entry.path.split("?")[0] === test.simPath);
        expect(child, "the child's request reached the simulator").toBeDefined();
        // The child's list: the parent's items as sent, its reply as the API returned it, then its own.
        const parentItems = (test.body as Record<string, unknown>)[test.list] as unknown[];
        const childItems = (JSON.parse(child!.body) as Record<string, unknown[]>)[test.list]!;
        expect(childItems.slice(0, parentItems.length)).toEqual(parentItems);
        const reply = Array.isArray(file.response) ? file.response : [file.response];
        expect(childItems.slice(parentItems.length, parentItems.length + reply.length)).toEqual(reply);
        expect(JSON.stringify(childItems.slice(parentItems.length + reply.length))).toContain(
          "Audit the length checks.",
        );
      } finally {
        await capture.stop("SIGTERM");
        await rm(out, { recursive: true, force: true });
      }
    });
  }
});
