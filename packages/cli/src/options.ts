// Command-line parsing on node:util parseArgs: every parse error becomes a one-line UsageError, and
// the values forkd flags take (durations, counts) are checked in one place.
import { type ParseArgsConfig, parseArgs } from "node:util";
import { UsageError } from "./errors.js";

type OptionsConfig = NonNullable<ParseArgsConfig["options"]>;

/** What {@link parseCommandLine} returns: typed values of `O`, and the positionals. */
export type ParsedCommandLine<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: true }>
>;

/** Flags every command takes. */
export const COMMON_FLAGS = {
  help: { type: "boolean", short: "h" },
  verbose: { type: "boolean" },
} as const satisfies OptionsConfig;

/**
 * Parses `args` strictly against `options` (unknown flags, missing values and flags given a value
 * they do not take are usage errors).
 * @throws {@link UsageError} naming the command.
 */
export function parseCommandLine<const O extends OptionsConfig>(
  command: string,
  args: readonly string[],
  options: O,
): ParsedCommandLine<O> {
  try {
    return parseArgs({ args: [...args], options, strict: true, allowPositionals: true });
  } catch (error) {
    // parseArgs' messages are one sentence, sometimes with a suggestion after a newline or a ". To".
    const message = (error as Error).message.split("\n")[0]!.replace(/\. To specify .*$/, "");
    throw new UsageError(message, { hint: `see \`forkd ${command} --help\`` });
  }
}

/** Checks the number of positional arguments. */
export function expectPositionals(
  command: string,
  positionals: readonly string[],
  range: { min: number; max: number; names: string },
): void {
  if (positionals.length < range.min) {
    throw new UsageError(`missing ${range.names}`, { hint: `see \`forkd ${command} --help\`` });
  }
  if (positionals.length > range.max) {
    const extra = positionals.slice(range.max).join(" ");
    throw new UsageError(`unexpected argument${positionals.length - range.max > 1 ? "s" : ""}: ${extra}`, {
      hint: `see \`forkd ${command} --help\``,
    });
  }
}

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * Parses a duration: `500ms`, `30s`, `5m`, `1h`, `2d`, combinations such as `1m30s`, or a bare number
 * of seconds.
 * @returns milliseconds.
 * @throws {@link UsageError} for anything else, or a duration that is not positive.
 */
export function parseDuration(flag: string, text: string): number {
  const trimmed = text.trim();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    ms = Number(trimmed) * 1000;
  } else if (/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(trimmed)) {
    ms = 0;
    for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) {
      ms += Number(amount) * DURATION_UNITS[unit!]!;
    }
  } else {
    throw new UsageError(`--${flag}: not a duration: ${JSON.stringify(text)} (use e.g. 500ms, 30s, 5m, 1h)`);
  }
  if (!(ms > 0)) throw new UsageError(`--${flag}: must be longer than 0, got ${JSON.stringify(text)}`);
  return Math.round(ms);
}

/**
 * Parses an integer flag within `[min, max]`.
 * @throws {@link UsageError} for anything else.
 */
export function parseInteger(flag: string, text: string, range: { min?: number; max?: number } = {}): number {
  const min = range.min ?? 0;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  const value = Number(text.trim());
  if (text.trim() === "" || !Number.isSafeInteger(value) || value < min || value > max) {
    const bounds = range.max === undefined ? `≥ ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`--${flag}: expected a whole number ${bounds}, got ${JSON.stringify(text)}`);
  }
  return value;
}

/**
 * A flag's value (given on the command line or by its environment variable) when it is one of
 * `allowed`; `fallback` when none was given.
 * @throws {@link UsageError} for any other value.
 */
export function parseChoice<T extends string>(
  flag: string,
  text: string | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (text === undefined || text === "") return fallback;
  if ((allowed as readonly string[]).includes(text)) return text as T;
  throw new UsageError(`--${flag}: expected one of ${allowed.join(", ")}, got ${JSON.stringify(text)}`);
}

/**
 * Parses a non-negative number flag (e.g. tokens per second).
 * @throws {@link UsageError} for anything else.
 */
export function parseNonNegative(flag: string, text: string): number {
  const value = Number(text.trim());
  if (text.trim() === "" || !Number.isFinite(value) || value < 0) {
    throw new UsageError(`--${flag}: expected a number ≥ 0, got ${JSON.stringify(text)}`);
  }
  return value;
}
