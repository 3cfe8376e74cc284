// @forkd/cli: the `forkd` command. The executable is dist/bin.js; `main` runs it in-process.
export type { Command, CommandContext } from "./context.js";
export { cliVersion } from "./context.js";
export type { CliErrorCode } from "./errors.js";
export { CliError, EXIT_CODES, NatsUnavailableError, toCliError, UsageError } from "./errors.js";
export type { CommandName } from "./help.js";
export { COMMAND_NAMES, helpText } from "./help.js";
export type { CliIo, OutputStream } from "./io.js";
export { processIo } from "./io.js";
export { main } from "./main.js";
