// Redirections: only reading, /dev/null and descriptor duplication are read-only; never a network path.
import type { Redirect } from "./lexer.js";

const DESCRIPTOR = /^(?:[0-9]+-?|-)$/;

export function checkRedirect(redirect: Redirect): string | undefined {
  const { op, target } = redirect;
  const shown = `${redirect.fd ?? ""}${op}${target.raw}`;
  // bash opens a connection for any path that names /dev/tcp or /dev/udp after expansion, so a
  // target whose value is not known here, or that mentions them anywhere (`//dev/tcp`, `/./dev/…`),
  // is refused whatever the direction.
  if (/dev\/+(?:tcp|udp)/.test(target.value) || /dev\/+(?:tcp|udp)/.test(target.raw)) {
    return `the redirection ${shown} opens a network connection`;
  }
  switch (op) {
    case "<":
      // An unquoted leading `~` is tilde expansion: `~+` is $PWD, `~user` a home directory.
      return target.dynamic || target.raw.startsWith("~")
        ? `the input redirection ${shown} has a target known only at run time (it could be a network path)`
        : undefined;
    case "<<":
    case "<<-":
      return undefined;
    case "<&":
      return !target.dynamic && DESCRIPTOR.test(target.value)
        ? undefined
        : `the redirection ${shown} is not a descriptor duplication`;
    case ">&":
      if (!target.dynamic && DESCRIPTOR.test(target.value)) return undefined;
      break;
  }
  if (!target.dynamic && target.value === "/dev/null") return undefined;
  return `the output redirection ${shown} writes to a file (only /dev/null and duplications like 2>&1 are allowed)`;
}
