// `forkd daemon`: @forkd/daemon's process (flags, environment, config file; pino logs; SIGTERM drain)
// with the CLI's error handling: a bad configuration exits 2, an unreachable NATS exits 3.
import { loadDaemonConfig, runDaemonProcess } from "@forkd/daemon";
import type { CommandContext } from "../context.js";
import { CliError } from "../errors.js";
import { isNatsConnectionError, natsUnavailable } from "../nats.js";

/** Runs a daemon until SIGTERM/SIGINT; resolves with the exit code of its drain. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  // --verbose is the CLI's; the daemon's parser knows only its own flags.
  const daemonArgs = args.filter((arg) => arg !== "--verbose");
  const config = loadDaemonConfig({ argv: daemonArgs, env: context.io.env });
  try {
    return await runDaemonProcess(config, { version: context.version });
  } catch (error) {
    if (isNatsConnectionError(error)) throw natsUnavailable(config.nats.servers, error);
    if ((error as { name?: string }).name === "ClientError") {
      throw new CliError("nats_unavailable", (error as Error).message, {
        cause: error,
        hint: "forkd needs JetStream: start nats-server with -js",
      });
    }
    throw error;
  }
}
