// The class rule run before parsing: text bash may evaluate as code or open as a connection,
// wherever it appears (quoted, in a here-document, after $'…' decoding).

/**
 * Text bash may run as code even where the classifier sees data: a command substitution, process
 * substitution or arithmetic (`$(…)`, backquotes, `<(…)`, `>(…)`, `$[…]`, `$((…))`) anywhere —
 * quoted, in a here-document, or in a word after `$'…'` decoding — because builtins such as
 * `test -v 'a[$(cmd)]'`, `[ -v … ]` and `printf -v` evaluate array subscripts; and `/dev/tcp`,
 * `/dev/udp` anywhere, which bash opens as network connections. Checked on the raw command and on
 * every word's value, so a class of constructs is refused, not a list of payloads.
 */
export function evaluatedCode(text: string): string | undefined {
  // `$'…'` strings are checked as bash decodes them (`$'\x24(id)'` is `$(id)`).
  const decoded = text.replace(/\$'((?:[^'\\]|\\.)*)'/gs, (_match, body: string) => decodeAnsiC(body));
  for (const candidate of decoded === text ? [text] : [text, decoded]) {
    if (/\$\(|`|<\(|>\(|\$\[/.test(candidate)) {
      return "it contains a command substitution, process substitution or arithmetic that bash may evaluate even inside quotes (array subscripts of test -v, printf -v, …)";
    }
    if (/dev\/+(?:tcp|udp)/.test(candidate)) {
      return "it names /dev/tcp or /dev/udp, which bash opens as network connections";
    }
  }
  return undefined;
}

const ANSI_C_LETTERS: Readonly<Record<string, string>> = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  v: "\v",
};

/** A `$'…'` body as bash decodes it: `\xHH`, `\NNN`, `\uHHHH`, `\UHHHHHHHH`, `\cX` and the letter escapes. */
function decodeAnsiC(body: string): string {
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|c.|.)/gs,
    (_m, esc: string) => {
      const head = esc[0] ?? "";
      if (head === "x" || head === "u" || head === "U") {
        const code = Number.parseInt(esc.slice(1), 16);
        return code <= 0x10ffff ? String.fromCodePoint(code) : "";
      }
      if (head >= "0" && head <= "7") return String.fromCharCode(Number.parseInt(esc, 8));
      if (head === "c") return String.fromCharCode(esc.charCodeAt(1) & 0x1f);
      return ANSI_C_LETTERS[esc] ?? esc;
    },
  );
}
