// sed: no in-place editing, no script from a file, and a script parsed far enough to find every
// command that writes (w, W, s///w) or runs (e, s///e).
import { longOptionIs, parseOptions, type Validator } from "../options.js";

export const sedValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "efl",
    shortOptionalArg: "i",
    longWithArg: ["expression", "file", "line-length"],
  });
  const scripts: string[] = [];
  for (const arg of parsed) {
    if (arg.kind === "short") {
      if (arg.letter === "i") return "sed -i edits files in place";
      if (arg.letter === "f") return "sed -f reads its script from a file the classifier cannot inspect";
      if (arg.letter === "e") {
        if (arg.value === undefined) return "sed -e has no script";
        scripts.push(arg.value);
      }
    } else if (arg.kind === "long") {
      const option = longOptionIs(arg.name, ["in-place", "file", "expression"]);
      if (option === "in-place") return "sed --in-place edits files in place";
      if (option === "file") return "sed --file reads its script from a file the classifier cannot inspect";
      if (option === "expression") {
        if (arg.value === undefined) return "write sed --expression=SCRIPT or -e SCRIPT";
        scripts.push(arg.value);
      }
    }
  }
  if (scripts.length === 0) {
    const script = parsed.find((arg) => arg.kind === "operand");
    if (script === undefined) return undefined;
    scripts.push(script.word.value);
  }
  return checkSedScript(scripts.join("\n"));
};

/**
 * Parses a GNU sed script far enough to find every command, and refuses the ones that write or run:
 * `w`/`W` (write a file), `e` (run a command), and the `s` flags `w` and `e`. Unknown commands are refused.
 */
function checkSedScript(script: string): string | undefined {
  const s = script;
  let i = 0;
  let depth = 0;
  const blanks = (): void => {
    while (s[i] === " " || s[i] === "\t") i++;
  };
  const toLineEnd = (): void => {
    while (i < s.length && s[i] !== "\n") i++;
  };
  /** Reads up to and including an unescaped `delimiter`; false when the line ends first. */
  const delimited = (delimiter: string): boolean => {
    while (i < s.length) {
      const c = s[i]!;
      if (c === "\\") i += 2;
      else if (c === delimiter) {
        i++;
        return true;
      } else if (c === "\n") return false;
      else i++;
    }
    return false;
  };
  const address = (second: boolean): boolean => {
    const c = s[i];
    if (c !== undefined && /[0-9]/.test(c)) {
      while (/[0-9]/.test(s[i] ?? "")) i++;
      if (s[i] === "~") {
        i++;
        while (/[0-9]/.test(s[i] ?? "")) i++;
      }
      return true;
    }
    if (second && (c === "+" || c === "~")) {
      i++;
      while (/[0-9]/.test(s[i] ?? "")) i++;
      return true;
    }
    if (c === "$") {
      i++;
      return true;
    }
    if (c === "/" || c === "\\") {
      const delimiter = c === "/" ? "/" : s[i + 1];
      if (delimiter === undefined || delimiter === "\n") return false;
      i += c === "/" ? 1 : 2;
      if (!delimited(delimiter)) return false;
      while (s[i] === "I" || s[i] === "M") i++;
      return true;
    }
    return !second;
  };

  while (i < s.length) {
    while (i < s.length && (s[i] === " " || s[i] === "\t" || s[i] === "\n" || s[i] === ";")) i++;
    if (i >= s.length) break;
    if (!address(false)) return "sed script: address not understood";
    blanks();
    if (s[i] === ",") {
      i++;
      blanks();
      if (!address(true)) return "sed script: address not understood";
    }
    blanks();
    while (s[i] === "!") {
      i++;
      blanks();
    }
    const command = s[i];
    i++;
    switch (command) {
      case "{":
        depth++;
        continue;
      case "#":
        toLineEnd();
        continue;
      case "a":
      case "i":
      case "c": {
        // Text to insert runs to the end of the line; a backslash continues it onto the next. The
        // backslash of `a\` belongs to the text as GNU sed reads it: `a\` and a newline (the classic
        // form) continues onto the next line, `a\\` and a newline is a backslash, and the line ends.
        blanks();
        const textStart = i;
        while (i < s.length && s[i] !== "\n") i += s[i] === "\\" ? 2 : 1;
        if (s.slice(textStart, i).includes(";")) return textWithSemicolon(command);
        continue;
      }
      case "r":
      case "R": {
        // Reads a file (to the end of the line): reading is fine.
        const nameStart = i;
        toLineEnd();
        if (s.slice(nameStart, i).includes(";")) return textWithSemicolon(command);
        continue;
      }
      case ":":
      case "b":
      case "t":
      case "T":
      case "v":
        while (i < s.length && s[i] !== "\n" && s[i] !== ";") i++;
        continue;
      case "w":
      case "W":
        return `sed ${command} command writes to a file`;
      case "e":
        return "sed e command runs a shell command";
      case "}":
        depth--;
        if (depth < 0) return "sed script: unexpected }";
        break;
      case "=":
      case "d":
      case "D":
      case "g":
      case "G":
      case "h":
      case "H":
      case "n":
      case "N":
      case "p":
      case "P":
      case "x":
      case "z":
      case "F":
        break;
      case "l":
      case "L":
      case "q":
      case "Q":
        blanks();
        while (/[0-9]/.test(s[i] ?? "")) i++;
        break;
      case "s":
      case "y": {
        const delimiter = s[i];
        if (delimiter === undefined || delimiter === "\n" || delimiter === "\\") {
          return `sed script: ${command} command not understood`;
        }
        i++;
        if (!delimited(delimiter) || !delimited(delimiter))
          return `sed script: unterminated ${command} command`;
        if (command === "s") {
          for (;;) {
            const flag = s[i];
            if (flag === "e") return "sed s///e runs the result as a shell command";
            if (flag === "w") return "sed s///w writes to a file";
            if (flag === undefined || !/[gpiImM0-9]/.test(flag)) break;
            i++;
          }
        }
        break;
      }
      default:
        return `sed script: command "${command ?? ""}" is not understood`;
    }
    blanks();
    const after = s[i];
    if (after === ";" || after === "\n") i++;
    else if (after !== undefined && after !== "}" && after !== "#") {
      return `sed script: unexpected "${after}" after the ${command} command`;
    }
  }
  if (depth !== 0) return "sed script: unbalanced braces";
  return undefined;
}

/** Whether sed ends such text at a `;` differs between versions; either reading could hide a command. */
function textWithSemicolon(command: string): string {
  return `sed script: the text of the ${command} command contains ";", which sed versions read differently`;
}
