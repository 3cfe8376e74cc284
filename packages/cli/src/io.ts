// Where a command writes and what it knows about its terminal: the streams, whether they are
// terminals (live views, colours), and the environment. Injected so that commands stay testable.

/** A stream a command writes text to. */
export interface OutputStream {
  write(text: string): unknown;
  /** Set when the stream is a terminal. */
  readonly isTTY?: boolean;
  /** Terminal width in characters. */
  readonly columns?: number;
  /** Terminal height in lines. */
  readonly rows?: number;
}

/** Everything a command reads from and writes to, besides NATS and the network. */
export interface CliIo {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env };
}

/** Writes `text` and a newline. */
export function writeLine(stream: OutputStream, text = ""): void {
  stream.write(`${text}\n`);
}

/** True when `stream` is a terminal that understands cursor movement (not `TERM=dumb`). */
export function isInteractive(stream: OutputStream, env: NodeJS.ProcessEnv): boolean {
  return stream.isTTY === true && env.TERM !== "dumb";
}

/** Colours for terminals; plain text when `NO_COLOR` is set or the stream is not a terminal. */
export interface Style {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

const ansi = (open: number, close: number) => (text: string) => `\x1b[${open}m${text}\x1b[${close}m`;

/** The style for `stream`: colours on a terminal unless `NO_COLOR`; `FORCE_COLOR` forces them. */
export function styleFor(stream: OutputStream, env: NodeJS.ProcessEnv): Style {
  const forced = env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0";
  const enabled = forced || (isInteractive(stream, env) && (env.NO_COLOR ?? "") === "");
  const plain = (text: string) => text;
  return {
    enabled,
    bold: enabled ? ansi(1, 22) : plain,
    dim: enabled ? ansi(2, 22) : plain,
    red: enabled ? ansi(31, 39) : plain,
    green: enabled ? ansi(32, 39) : plain,
    yellow: enabled ? ansi(33, 39) : plain,
    cyan: enabled ? ansi(36, 39) : plain,
  };
}

/** A run status in its colour: green when completed, red when it did not, yellow while it runs. */
export function colourStatus(style: Style, status: string): string {
  if (status === "completed") return style.green(status);
  if (status === "failed" || status === "timeout" || status === "aborted") return style.red(status);
  return style.yellow(status);
}
