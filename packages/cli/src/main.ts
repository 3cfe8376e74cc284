// `forkd <command> …`: dispatches to the command, turns every failure into one line on stderr and an
// exit code (docs/cli.md lists them), and loads only the command it runs.
import { type Command, type CommandContext, cliVersion } from "./context.js";
import { type CliError, EXIT_CODES, toCliError, UsageError } from "./errors.js";
import { COMMAND_NAMES, type CommandName, helpText, isCommandName } from "./help.js";
import { Interruption } from "./interrupt.js";
import { type CliIo, processIo, writeLine } from "./io.js";

const COMMANDS: Record<CommandName, () => Promise<{ run: Command }>> = {
  daemon: () => import("./commands/daemon.js"),
  fork: () => import("./commands/fork.js"),
  watch: () => import("./commands/watch.js"),
  ps: () => import("./commands/ps.js"),
  abort: () => import("./commands/abort.js"),
  steer: () => import("./commands/steer.js"),
  budget: () => import("./commands/budget.js"),
  sim: () => import("./commands/sim.js"),
  demo: () => import("./commands/demo.js"),
  models: () => import("./commands/models.js"),
  proxy: () => import("./commands/proxy.js"),
  capture: () => import("./commands/capture.js"),
  mcp: () => import("./commands/mcp.js"),
  web: () => import("./commands/web.js"),
};

/** The arguments before `--` (after it, everything is a value). */
function flagsOf(args: readonly string[]): readonly string[] {
  const end = args.indexOf("--");
  return end === -1 ? args : args.slice(0, end);
}

function describeError(error: CliError, command: string | undefined, verbose: boolean): string {
  const who = command === undefined ? "forkd" : `forkd ${command}`;
  const line = `${who}: ${error.message.split("\n")[0]}${error.hint === undefined ? "" : ` (${error.hint})`}`;
  if (!verbose) return line;
  const stacks: string[] = [];
  let cause: unknown = error;
  while (cause instanceof Error) {
    stacks.push(cause.stack ?? `${cause.name}: ${cause.message}`);
    cause = cause.cause;
  }
  return [line, ...stacks].join("\ncaused by: ");
}

/**
 * Runs `forkd` with `argv` (without the node and script paths) and resolves with the exit code.
 * Never rejects: errors are written to `io.stderr`.
 */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const flags = flagsOf(argv);
  const verbose = flags.includes("--verbose");
  const [first, ...rest] = argv;
  let command: CommandName | undefined;
  const interruption = new Interruption();
  try {
    if (first === undefined) {
      io.stderr.write(`${helpText()}\n`);
      return EXIT_CODES.usage;
    }
    if (first === "--help" || first === "-h" || first === "help") {
      const topic = rest[0];
      writeLine(io.stdout, topic !== undefined && isCommandName(topic) ? helpText(topic) : helpText());
      return EXIT_CODES.ok;
    }
    if (first === "--version" || first === "-v") {
      writeLine(io.stdout, cliVersion());
      return EXIT_CODES.ok;
    }
    if (!isCommandName(first)) {
      throw new UsageError(
        first.startsWith("-") ? `unknown option ${first}` : `unknown command ${JSON.stringify(first)}`,
        { hint: `commands: ${COMMAND_NAMES.join(", ")}; see \`forkd --help\`` },
      );
    }
    command = first;
    if (flagsOf(rest).some((arg) => arg === "--help" || arg === "-h")) {
      writeLine(io.stdout, helpText(command));
      return EXIT_CODES.ok;
    }
    const context: CommandContext = { io, interruption, verbose, version: cliVersion() };
    const module = await COMMANDS[command]();
    return await module.run(rest, context);
  } catch (error) {
    const cliError = toCliError(error);
    writeLine(io.stderr, describeError(cliError, command, verbose));
    return cliError.exitCode;
  } finally {
    interruption[Symbol.dispose]();
  }
}
