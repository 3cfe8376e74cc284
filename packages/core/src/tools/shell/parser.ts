// The parser: flattens lists, pipelines, subshells, brace groups and if/while/until/for into the
// simple commands bash would run, checking the grammar closely enough that none is hidden.
import type { ControlOp, Redirect, Token, Word } from "./lexer.js";
import { reject } from "./reject.js";

export interface SimpleCommand {
  readonly words: Word[];
}

export interface Program {
  readonly commands: SimpleCommand[];
  /** Every redirection of the line, on simple commands and on compound commands alike. */
  readonly redirects: Redirect[];
}

/** Words that are reserved in command position; the ones not handled below are refused. */
const KEYWORDS = new Set([
  "!",
  "{",
  "}",
  "if",
  "then",
  "elif",
  "else",
  "fi",
  "while",
  "until",
  "do",
  "done",
  "for",
  "in",
  "case",
  "esac",
  "select",
  "function",
  "[[",
  "]]",
  "time",
  "coproc",
]);

type FrameKind = "top" | "(" | "{" | "if" | "then" | "elif" | "else" | "while" | "for" | "do";

/** Keywords that end a condition or a branch and open the next part: which frame they continue, and as what. */
const OPENERS: ReadonlyMap<string, { from: readonly FrameKind[]; becomes: FrameKind }> = new Map([
  ["then", { from: ["if", "elif"], becomes: "then" }],
  ["elif", { from: ["then"], becomes: "elif" }],
  ["else", { from: ["then"], becomes: "else" }],
  ["do", { from: ["while"], becomes: "do" }],
]);

interface Frame {
  kind: FrameKind;
  /** Commands completed directly in this frame; an empty body is a syntax error in bash. */
  commands: number;
}

/**
 * Flattens the token stream into its simple commands, checking the grammar enough that the commands
 * found are exactly the ones bash would run. Grouping does not matter for the verdict (every command
 * must be read-only, every redirection harmless), but a construct parsed wrongly could hide a command.
 */
export function parse(tokens: readonly Token[]): Program {
  const commands: SimpleCommand[] = [];
  const redirects: Redirect[] = [];
  const stack: Frame[] = [{ kind: "top", commands: 0 }];
  type State = "start" | "command" | "after" | "for-name" | "for-in" | "for-words" | "for-do";
  let state: State = "start";
  /** The last operator or keyword that led into `start`: closers need a `;` or newline before them. */
  let previous = "begin";
  let current: SimpleCommand | undefined;

  const top = (): Frame => stack[stack.length - 1]!;
  const finishCommand = (): void => {
    if (current !== undefined) {
      commands.push(current);
      top().commands++;
      current = undefined;
    }
  };
  const requireSeparator = (keyword: string): void => {
    if (previous !== ";" && previous !== "\n") reject(`syntax: "${keyword}" must follow ";" or a newline`);
  };
  const nonEmpty = (keyword: string): Frame => {
    const frame = top();
    if (frame.commands === 0) reject(`syntax: empty command list before "${keyword}"`);
    return frame;
  };
  const close = (kinds: readonly FrameKind[], closer: string): void => {
    const frame = nonEmpty(closer);
    if (!kinds.includes(frame.kind)) reject(`syntax: unexpected "${closer}"`);
    stack.pop();
    top().commands++;
    state = "after";
  };
  const afterCommandOp = (op: ControlOp): void => {
    if (op === "&") reject("background jobs (&) are not allowed");
    if (op === "(") reject("syntax: unexpected ( (function definitions are not supported)");
    if (op === ")") {
      close(["("], ")");
      return;
    }
    state = "start";
    previous = op;
  };

  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    // `as State`: the closures above also assign it, which control-flow narrowing does not see.
    switch (state as State) {
      case "start": {
        if (token.kind === "redirect") {
          current = { words: [] };
          redirects.push(token);
          state = "command";
        } else if (token.kind === "word") {
          const word = token.word;
          if (!word.quoted && !word.dynamic && KEYWORDS.has(word.value)) {
            startKeyword(word.value);
          } else {
            if (word.assignment) {
              reject(
                `variable assignment ${word.raw} can change what a command does (PAGER, GIT_*, LD_PRELOAD …)`,
              );
            }
            current = { words: [word] };
            state = "command";
          }
        } else if (token.op === "(") {
          const next = tokens[i + 1];
          if (next?.kind === "op" && next.op === "(") {
            reject("arithmetic commands ((…)) are not supported");
          }
          stack.push({ kind: "(", commands: 0 });
          previous = "(";
        } else if (token.op === "\n") {
          // A newline after && || | continues the list; elsewhere it separates commands.
          if (previous !== "&&" && previous !== "||" && previous !== "|" && previous !== "|&")
            previous = "\n";
        } else if (token.op === ")") {
          requireSeparator(")");
          close(["("], ")");
        } else if (token.op === "&") {
          reject("background jobs (&) are not allowed");
        } else {
          reject(`syntax: missing command before "${token.op}"`);
        }
        break;
      }
      case "command": {
        if (token.kind === "word") {
          if (current!.words.length === 0 && token.word.assignment) {
            reject(`variable assignment ${token.word.raw} can change what a command does`);
          }
          current!.words.push(token.word);
        } else if (token.kind === "redirect") {
          redirects.push(token);
        } else {
          finishCommand();
          afterCommandOp(token.op);
        }
        break;
      }
      case "after": {
        if (token.kind === "redirect") redirects.push(token);
        else if (token.kind === "word")
          reject(`syntax: unexpected word ${token.word.raw} after a compound command`);
        else afterCommandOp(token.op);
        break;
      }
      case "for-name": {
        if (
          token.kind !== "word" ||
          token.word.quoted ||
          !/^[A-Za-z_][A-Za-z0-9_]*$/.test(token.word.value)
        ) {
          reject("syntax: for needs a variable name");
        }
        // The loop assigns its variable: an upper-case name can be an environment variable (PATH,
        // LD_PRELOAD, GIT_*) that steers the commands in the loop.
        if (!/^[a-z_][a-z0-9_]*$/.test(token.word.value)) {
          reject(`the for loop assigns ${token.word.value}; only lower-case loop variables are allowed`);
        }
        state = "for-in";
        break;
      }
      case "for-in":
      case "for-words": {
        if (token.kind === "word" && state === "for-in" && !token.word.quoted && token.word.value === "in") {
          state = "for-words";
        } else if (token.kind === "word" && state === "for-words") {
          // The loop's words are values, not commands: expansions in them are harmless.
        } else if (token.kind === "op" && (token.op === ";" || token.op === "\n")) {
          state = "for-do";
        } else {
          reject("syntax: unexpected token in a for loop header");
        }
        break;
      }
      case "for-do": {
        if (token.kind === "op" && token.op === "\n") break;
        if (token.kind !== "word" || token.word.quoted || token.word.value !== "do")
          reject('syntax: for needs "do"');
        top().kind = "do";
        state = "start";
        previous = "do";
        break;
      }
    }
  }

  function startKeyword(keyword: string): void {
    switch (keyword) {
      case "!":
        previous = "!";
        return;
      case "{":
        stack.push({ kind: "{", commands: 0 });
        previous = "{";
        return;
      case "}":
        requireSeparator("}");
        close(["{"], "}");
        return;
      case "if":
      case "while":
      case "until":
        stack.push({ kind: keyword === "if" ? "if" : "while", commands: 0 });
        previous = keyword;
        return;
      case "then":
      case "elif":
      case "else":
      case "do": {
        requireSeparator(keyword);
        const frame = nonEmpty(keyword);
        const opener = OPENERS.get(keyword)!;
        if (!opener.from.includes(frame.kind)) reject(`syntax: unexpected "${keyword}"`);
        frame.kind = opener.becomes;
        frame.commands = 0;
        previous = keyword;
        return;
      }
      case "fi":
        requireSeparator("fi");
        close(["then", "else"], "fi");
        return;
      case "done":
        requireSeparator("done");
        close(["do"], "done");
        return;
      case "for":
        stack.push({ kind: "for", commands: 0 });
        state = "for-name";
        return;
      default:
        reject(`the shell construct "${keyword}" is not supported; use simple commands, pipes and ; && ||`);
    }
  }

  const final = state as State;
  if (final === "command") finishCommand();
  if (final.startsWith("for-")) reject("syntax: incomplete for loop");
  if (final === "start" && ["&&", "||", "|", "|&", "!"].includes(previous)) {
    reject(`syntax: the line ends after "${previous}"`);
  }
  if (stack.length > 1) reject(`syntax: "${top().kind}" is not closed`);
  return { commands, redirects };
}
