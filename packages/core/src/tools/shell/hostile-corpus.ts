// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands; ${…} is shell syntax.
// Hostile command lines, grouped by the class of bash behaviour each one abuses. Every payload really
// does harm when bash runs it (a test runs each one in a scratch directory and sees the effect), and
// the read-only classifier must refuse every one. A new way around the classifier joins its class
// here, or opens a new class, before the classifier is changed (#11 findings 1, 2 and 15).

/** One hostile command line and what it does when bash runs it. */
export interface HostileShellPayload {
  /** The command; `PORT` stands for the port of a listener on 127.0.0.1. */
  readonly command: string;
  /**
   * What bash visibly does: `writes` — a file of the working directory appears or changes (most
   * payloads `touch pwned`); `connects` — a connection reaches the listener on `PORT`.
   */
  readonly effect: "writes" | "connects";
  /** Files the working directory must hold for the payload to work (empty files). */
  readonly files?: readonly string[];
}

/** A class of bash behaviour the classifier must not mistake for reading. */
export interface HostileShellClass {
  readonly name: string;
  /** What bash does that turns data into code or a connection. */
  readonly why: string;
  readonly payloads: readonly HostileShellPayload[];
}

const writes = (command: string, files?: readonly string[]): HostileShellPayload =>
  files === undefined ? { command, effect: "writes" } : { command, effect: "writes", files };
const connects = (command: string): HostileShellPayload => ({ command, effect: "connects" });

/** The hostile corpus: each class with payloads that work against bash 5. */
export const HOSTILE_SHELL_CORPUS: readonly HostileShellClass[] = [
  {
    name: "code in a quoted array subscript",
    why: "test -v, [ -v and printf -v take a variable reference and evaluate its subscript, expanding $(…) and backquotes inside quotes",
    payloads: [
      writes("test -v 'x[$(touch pwned)]'"),
      writes("[ -v 'x[$(touch pwned)]' ]"),
      writes("printf -v 'x[$(touch pwned)]' %s y"),
      writes("test -v 'x[`touch pwned`]'"),
      writes("test -v $'x[\\x24(touch pwned)]'"),
      // The same `$` in the other escapes bash decodes in `$'…'`: octal and \u.
      writes("test -v $'x[\\044(touch pwned)]'"),
      writes("test -v $'x[\\u0024(touch pwned)]'"),
    ],
  },
  {
    name: "a subscript built at run time",
    why: "the text bash evaluates comes from a loop variable or a glob, so no literal $( is ever written; arithmetic also recurses into the values of the variables it names",
    payloads: [
      writes('for d in $; do test -v "x[${d}(touch pwned)]"; done'),
      writes("for d in '$'; do [ -v \"x[${d}(touch pwned)]\" ]; done"),
      writes("for d in $; do for i in \"a[${d}(touch pwned)]\"; do test -v 'x[i]'; done; done"),
      writes('for a in -v; do for d in $; do test "$a" "x[${d}(touch pwned)]"; done; done'),
      writes('for d in $; do for v in "a[${d}(touch pwned)]"; do echo "${!v}"; done; done'),
      writes("test *", ["-v", "x[$(touch pwned)]"]),
    ],
  },
  {
    name: "arithmetic and expansion operators",
    why: "arithmetic commands and expansions, [[ … ]] and the @P transformation evaluate their text",
    payloads: [
      writes("let 'x[$(touch pwned)]'"),
      writes("[[ -v x[$(touch pwned)] ]]"),
      writes("echo $((x[$(touch pwned)]))"),
      writes('for d in $; do for v in "${d}(touch pwned)"; do echo "${v@P}"; done; done'),
    ],
  },
  {
    name: "command and process substitution",
    why: "$(…), backquotes, <(…) and >(…) run commands wherever they appear, here-document bodies included",
    payloads: [
      writes("echo $(touch pwned)"),
      writes('echo "`touch pwned`"'),
      writes("cat <(touch pwned)"),
      writes("echo >(touch pwned) >/dev/null; wait $!"),
      writes("cat <<EOF\n$(touch pwned)\nEOF"),
    ],
  },
  {
    name: "network paths in redirections",
    why: "bash opens /dev/tcp/HOST/PORT itself, for any redirection whose target reads so after expansion",
    payloads: [
      connects("cat </dev/tcp/127.0.0.1/PORT"),
      connects("ls >&/dev/tcp/127.0.0.1/PORT"),
      connects("for p in PORT; do echo x >/dev/tcp/127.0.0.1/$p; done"),
      connects("for a in tc; do cat </dev/${a}p/127.0.0.1/PORT; done"),
      // Quote removal makes the path: the command line never reads "/dev/tcp", the target's value does.
      connects('cat <"/dev/"tcp/127.0.0.1/PORT'),
      connects("cat </dev/\\tcp/127.0.0.1/PORT"),
      connects("ls >&'/dev/'tcp/127.0.0.1/PORT"),
    ],
  },
  {
    name: "abbreviated long options",
    why: "getopt_long takes any unambiguous prefix of a long option, so --o is --output",
    payloads: [
      writes("sort --o=pwned f", ["f"]),
      writes("sort --outp=pwned f", ["f"]),
      writes("sed --in-pl=.pwned -e s/a/b/ f", ["f"]),
      writes("env -S'touch pwned'"),
    ],
  },
];
