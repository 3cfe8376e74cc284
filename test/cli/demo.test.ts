// `forkd demo` end to end, not on a terminal: it starts its own nats-server (the binary), the
// simulator and three daemons, and prints a bill whose numbers add up and show the cache at work.
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, runCli, spawnCli } from "./support.js";

interface BillRow {
  name: string;
  input: number;
  cacheWrite: number;
  cacheRead: number;
  output: number;
  cost: number;
}

const ROW = /^(.+?)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+\d+\.\d%\s+([\d,]+)\s+\$(\d+\.\d{4})\b/;
const int = (text: string) => Number(text.replaceAll(",", ""));

function billRows(stdout: string): Map<string, BillRow> {
  const rows = new Map<string, BillRow>();
  for (const line of stdout.split("\n")) {
    const match = ROW.exec(line);
    if (match === null) continue;
    const [, name, input, cacheWrite, cacheRead, output, cost] = match;
    const key = /^child \d+/.exec(name!)?.[0] ?? name!.replace(/ \(.*$/, "");
    rows.set(key, {
      name: name!,
      input: int(input!),
      cacheWrite: int(cacheWrite!),
      cacheRead: int(cacheRead!),
      output: int(output!),
      cost: Number(cost),
    });
  }
  return rows;
}

describe("forkd demo", () => {
  it("forks five children from the 48k turn and prints a consistent bill, then cleans up", async () => {
    const startedAt = Date.now();
    // No NATS_URL, and --start-nats so that a server someone runs on localhost:4222 is not used.
    const result = await runCli(["demo", "--start-nats"], { env: cleanEnv(), timeoutMs: 60_000 });
    const elapsed = Date.now() - startedAt;
    expect(result.stderr).not.toMatch(/forkd demo:/);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^NATS: nats:\/\/127\.0\.0\.1:\d+ — nats-server \d+\.\d+\.\d+ \(PATH: \/\S+\/nats-server\) started by the demo in a temp dir/m,
    );

    const rows = billRows(result.stdout);
    const children = [1, 2, 3, 4, 5].map((i) => rows.get(`child ${i}`)!);
    expect(children.every(Boolean), result.stdout).toBe(true);
    const parent = rows.get("parent turn")!;
    const forked = rows.get("forked total")!;
    const unforked = rows.get("without forking")!;
    expect(parent.cacheWrite).toBeGreaterThan(40_000); // the parent's turn wrote the 48k prefix

    // The total is the sum of the children (the cost up to the rounding of the shown digits).
    for (const column of ["input", "cacheWrite", "cacheRead", "output"] as const) {
      expect(forked[column]).toBe(children.reduce((sum, child) => sum + child[column], 0));
    }
    const costSum = children.reduce((sum, child) => sum + child.cost, 0);
    expect(Math.abs(forked.cost - costSum)).toBeLessThanOrEqual(0.0001 * children.length);

    // Child 1 reads the parent's prefix and writes the shared part; 2..5 read both.
    expect(children[0]!.cacheRead).toBeGreaterThan(40_000);
    for (const child of children.slice(1)) {
      expect(child.cacheRead).toBeGreaterThan(children[0]!.cacheRead);
      expect(child.cacheWrite).toBe(0);
    }
    // Every child read what its prefix allows: no cache miss is shown.
    expect(result.stdout).not.toMatch(/^child \d.*\bmiss /m);
    // Without forking every input token is paid in full.
    expect(unforked.cacheRead).toBe(0);
    expect(unforked.input).toBeGreaterThan(forked.cacheRead);
    expect(unforked.output).toBe(forked.output);
    expect(forked.cost).toBeLessThan(unforked.cost);
    const saving = /^saving: \$(\d+\.\d{4}) \((\d+\.\d)%\)/m.exec(result.stdout);
    expect(saving).not.toBeNull();
    expect(Number(saving![1])).toBeCloseTo(unforked.cost - forked.cost, 3);

    // Everything it started is gone.
    const dirs = [...result.stdout.matchAll(/(\/[\w./-]*forkd-(?:demo|nats-server)-\w+)/g)].map((m) => m[1]!);
    expect(dirs.length).toBeGreaterThanOrEqual(2);
    for (const dir of dirs) expect(existsSync(dir), dir).toBe(false);
    expect(elapsed).toBeLessThan(30_000);
  });

  it("stops everything it started on Ctrl-C and exits 130", async () => {
    const demo = spawnCli(["demo", "--start-nats", "--tps", "20"], { env: cleanEnv() });
    try {
      // Right after the launch: the children's event readers are still being set up.
      await demo.waitForLine((line) => line.startsWith("forking 5 children"));
      const interruptedAt = Date.now();
      // Its output in the message: the exit code alone has not told why this failed (1 in a few
      // whole-suite runs, never alone).
      const exit = await demo.stop("SIGINT");
      expect(exit, `stderr:\n${demo.stderr()}\nstdout:\n${demo.stdout().slice(-3000)}`).toEqual({
        code: 130,
        signal: null,
      });
      // Not after the children have run to their ends (at 20 tokens/s, well over ten seconds).
      expect(Date.now() - interruptedAt).toBeLessThan(5_000);
    } finally {
      await demo.stop("SIGKILL");
    }
    expect(demo.stderr()).toContain("interrupted: stopping everything the demo started");
    const dirs = [...demo.stdout().matchAll(/(\/[\w./-]*forkd-(?:demo|nats-server)-\w+)/g)].map((m) => m[1]!);
    expect(dirs.length).toBeGreaterThanOrEqual(2);
    for (const dir of dirs) expect(existsSync(dir), dir).toBe(false);
  });

  it("prints the bill as JSON with --json", async () => {
    const result = await runCli(
      ["demo", "--start-nats", "--json", "--children", "2", "--daemons", "1", "--ttft", "0", "--tps", "0"],
      { env: cleanEnv(), timeoutMs: 60_000 },
    );
    expect(result.code, result.stderr).toBe(0);
    const bill = JSON.parse(result.stdout) as {
      children: {
        status: string;
        cache_read_tokens: number;
        daemon_id: string;
        cache_share: number;
        cache_miss: unknown;
      }[];
      forked: { cost_usd: number };
      unforked: { cost_usd: number; children: unknown[] };
      saving_usd: number;
    };
    expect(bill.children.map((child) => child.status)).toEqual(["completed", "completed"]);
    expect(bill.children.map((child) => child.daemon_id)).toEqual(["demo-1", "demo-1"]);
    expect(bill.children[1]!.cache_read_tokens).toBeGreaterThan(bill.children[0]!.cache_read_tokens);
    // Both read the parent's prefix: most of their input is cached, and neither missed.
    for (const child of bill.children) {
      expect(child.cache_share).toBeGreaterThan(0.9);
      expect(child.cache_miss).toBeNull();
    }
    expect(bill.unforked.children).toHaveLength(2);
    expect(bill.saving_usd).toBeCloseTo(bill.unforked.cost_usd - bill.forked.cost_usd, 6);
  });

  /** The bill of `forkd demo --provider <provider>` with two children on one daemon, at once. */
  async function providerBill(provider: string) {
    const result = await runCli(
      ["demo", "--start-nats", "--json", "--provider", provider].concat([
        "--children",
        "2",
        "--daemons",
        "1",
        "--ttft",
        "0",
        "--tps",
        "0",
      ]),
      { env: cleanEnv(), timeoutMs: 60_000 },
    );
    expect(result.code, result.stderr).toBe(0);
    const bill = JSON.parse(result.stdout) as {
      model: string;
      children: { status: string; cache_read_tokens: number; cache_write_tokens: number }[];
      forked: { cost_usd: number };
      unforked: { cost_usd: number };
    };
    expect(bill.children.map((child) => child.status)).toEqual(["completed", "completed"]);
    // Every child reads the parent's prefix from the cache.
    for (const child of bill.children) expect(child.cache_read_tokens).toBeGreaterThan(40_000);
    return bill;
  }

  it.each(["openai-chat", "openai-responses"])(
    "runs on the simulator's OpenAI %s route with --provider",
    async (provider) => {
      const bill = await providerBill(provider);
      expect(bill.model).toBe("gpt-5");
      // Their prompt_cache_key is the parent's; OpenAI charges no writes.
      expect(bill.children.map((child) => child.cache_write_tokens)).toEqual([0, 0]);
      expect(bill.forked.cost_usd).toBeLessThan(bill.unforked.cost_usd / 4);
    },
  );

  it("runs on the simulator's Gemini routes with --provider gemini: one explicit cache, billed once", async () => {
    const bill = await providerBill("gemini");
    expect(bill.model).toBe("gemini-2.5-flash");
    // The explicit cache's creation (and storage) is billed to the child that made it.
    const writes = bill.children.map((child) => child.cache_write_tokens).sort((a, b) => a - b);
    expect(writes[0]).toBe(0);
    expect(writes[1]).toBeGreaterThan(40_000);
    expect(bill.forked.cost_usd).toBeLessThan(bill.unforked.cost_usd);
  });

  it("refuses a captured turn of another API by name, before it starts anything", async () => {
    const dir = await mkdtemp(join(tmpdir(), "forkd-demo-native-"));
    try {
      const file = join(dir, "000001.json");
      const request = { model: "gpt-5", messages: [{ role: "user", content: "hi" }] };
      await writeFile(
        file,
        JSON.stringify({
          api: "openai-chat",
          path: "/openai/chat/completions",
          request,
          response: { role: "assistant", content: "ok" },
        }),
      );
      const result = await runCli(["demo", "--from", file], { env: cleanEnv(), timeoutMs: 30_000 });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `${file} holds a turn of the openai-chat API; the demo forks Anthropic-format turns`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses --real with an OpenAI provider", async () => {
    const result = await runCli(["demo", "--real", "--provider", "openai-chat"], {
      env: cleanEnv(),
      timeoutMs: 30_000,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--real runs on the Anthropic API only");
  });
});
