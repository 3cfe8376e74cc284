// find: an allow-list of tests and actions; -delete, -exec, -ok, -fprint… and anything unknown are refused.
import type { Validator } from "../options.js";

const FIND_DENIED: Readonly<Record<string, string>> = {
  "-delete": "find -delete deletes files",
  "-exec": "find -exec runs a command",
  "-execdir": "find -execdir runs a command",
  "-ok": "find -ok runs a command",
  "-okdir": "find -okdir runs a command",
  "-fprint": "find -fprint writes to a file",
  "-fprint0": "find -fprint0 writes to a file",
  "-fprintf": "find -fprintf writes to a file",
  "-fls": "find -fls writes to a file",
};

const FIND_NO_ARGUMENT = new Set([
  ...["-depth", "-d", "-mount", "-xdev", "-noleaf", "-follow", "-daystart", "-ignore_readdir_race"],
  ...["-noignore_readdir_race", "-warn", "-nowarn", "-true", "-false", "-nouser", "-nogroup", "-empty"],
  ...["-executable", "-readable", "-writable", "-print", "-print0", "-ls", "-prune", "-quit"],
  ...["-not", "-a", "-and", "-o", "-or", "(", ")", "!", ",", "-help", "--help", "-version", "--version"],
]);

const FIND_ONE_ARGUMENT = new Set([
  ...["-maxdepth", "-mindepth", "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename"],
  ...["-regex", "-iregex", "-regextype", "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime"],
  ...["-amin", "-ctime", "-cmin", "-newer", "-anewer", "-cnewer", "-perm", "-user", "-group", "-uid"],
  ...["-gid", "-links", "-inum", "-samefile", "-lname", "-ilname", "-fstype", "-used", "-context"],
  ...["-printf", "-files0-from"],
]);

/** find with an allow-list of tests and actions: anything else (-delete, -exec, -fprint, unknown) is refused. */
export const findValidator: Validator = (_name, args) => {
  let i = 0;
  while (i < args.length) {
    const v = args[i]!.value;
    if (v === "-H" || v === "-L" || v === "-P" || /^-O[0-9]*$/.test(v)) i++;
    else if (v === "-D") i += 2;
    else break;
  }
  const startsExpression = (v: string): boolean =>
    (v.startsWith("-") && v.length > 1) || v === "(" || v === ")" || v === "!" || v === ",";
  while (i < args.length && !startsExpression(args[i]!.value)) i++;
  while (i < args.length) {
    const v = args[i]!.value;
    const denied = FIND_DENIED[v];
    if (denied !== undefined) return denied;
    if (FIND_NO_ARGUMENT.has(v)) i++;
    else if (FIND_ONE_ARGUMENT.has(v) || /^-newer[aBcmt][aBcmt]$/.test(v)) i += 2;
    else return `find ${v} is not known to be read-only`;
  }
  return undefined;
};
