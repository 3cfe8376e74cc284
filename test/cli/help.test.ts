// `forkd --help`, every command's --help, and the one-line errors with their exit codes: no NATS
// needed (the NATS failures point at a port nothing listens on).
import { beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cleanEnv, runCli } from "./support.js";

const NOBODY = "nats://127.0.0.1:1";
const COMMAND_NAMES = ["daemon", "fork", "watch", "ps", "abort", "sim", "demo", "models", "web"];

beforeAll(() => assertBuilt());

describe.concurrent("forkd --help", () => {
  it("lists every command and the exit codes", async () => {
    const result = await runCli(["--help"]);
    expect(result.code).toBe(0);
    for (const command of COMMAND_NAMES) expect(result.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    expect(result.stdout).toContain("Exit codes: 0 ok");
    expect(result.stderr).toBe("");
  });

  it("prints the version", async () => {
    const result = await runCli(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it.each(COMMAND_NAMES)(
    "forkd %s --help describes the command, its options and exit codes",
    async (command) => {
      const result = await runCli([command, "--help"]);
      expect(result.code).toBe(0);
      expect(result.stdout.startsWith(`forkd ${command} — `)).toBe(true);
      expect(result.stdout).toContain(`Usage: forkd ${command}`);
      expect(result.stdout).toContain("--help");
      expect(result.stdout).toMatch(/Exit codes: 0 /);
    },
  );

  it("prints help even when other flags are wrong", async () => {
    const result = await runCli(["fork", "--bogus", "-h"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: forkd fork");
  });
});

describe.concurrent("errors", () => {
  it.each([
    [["fork", "--bogus"], /^forkd fork: Unknown option '--bogus'/],
    [["fork", "--directive", "x"], /^forkd fork: --from FILE is required/],
    [["nope"], /^forkd: unknown command "nope"/],
    [["demo", "--children", "0"], /^forkd demo: --children: expected a whole number from 1 to 50, got "0"/],
    [["watch", "--since", "soon"], /^forkd watch: --since: not a duration/],
    [["abort"], /^forkd abort: missing RUN_ID/],
    [["sim", "--port", "99999"], /^forkd sim: --port: expected a whole number from 0 to 65535/],
    [["daemon", "--concurrency", "zero"], /^forkd daemon: invalid daemon configuration at concurrency/],
    [["demo", "--real", "--tps", "5"], /^forkd demo: --ttft and --tps set the simulator's latency/],
  ])("forkd %j is a usage error: exit 2, one line on stderr", async (args, message) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });

  it("forkd fork with a missing file is a usage error", async () => {
    const result = await runCli(["fork", "--from", "/nonexistent/turn.json", "--directive", "x"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^forkd fork: cannot read \/nonexistent\/turn.json: ENOENT/);
  });

  it.each([
    ["ps", "--nats", NOBODY],
    ["watch", "--nats", NOBODY],
    ["abort", "some-run", "--nats", NOBODY],
    ["daemon", "--nats", NOBODY, "--workspace", "/tmp"],
  ])("forkd %s … exits 3 with one line when NATS is not there", async (...args) => {
    const result = await runCli(args);
    expect(result.code).toBe(3);
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/);
  });

  it("forkd demo with no way to get NATS exits 3 and says how to install nats-server", async () => {
    const env = cleanEnv({ NATS_SERVER_BIN: "/nonexistent/nats-server", FORKD_TEST_NATS: "binary" });
    const result = await runCli(["demo", "--start-nats"], { env });
    expect(result.code).toBe(3);
    // One line: the route that was named and why it failed, then how to install nats-server.
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(
      /^forkd demo: no NATS server for the demo: NATS_SERVER_BIN: no executable \/nonexistent\/nats-server at that path \(.*apt-get install -y nats-server/,
    );
  });

  it("--verbose adds the stack trace", async () => {
    const result = await runCli(["ps", "--nats", NOBODY, "--verbose"]);
    expect(result.code).toBe(3);
    expect(result.stderr.split("\n").length).toBeGreaterThan(2);
    expect(result.stderr).toMatch(/\n\s+at /);
  });
});
