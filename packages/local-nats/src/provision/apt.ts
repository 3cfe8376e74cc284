// Provisioning nats-server with Debian's package manager, on the machines where that is the
// natural route: Debian or Ubuntu, as root or with password-less sudo.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

/** Where apt-get and (if not root) sudo are, as found on the search path. */
export interface AptTools {
  aptGet: string;
  /** The sudo binary to prefix commands with; undefined when running as root. */
  sudo: string | undefined;
}

/** Whether `/etc/os-release` (or the given file) names Debian, Ubuntu or a derivative. */
export function isDebianLike(osReleaseFile: string): boolean {
  let text: string;
  try {
    text = readFileSync(osReleaseFile, "utf8");
  } catch {
    return false;
  }
  const ids = [...text.matchAll(/^(?:ID|ID_LIKE)=["']?([^"'\n]*)/gm)].flatMap((m) =>
    (m[1] ?? "").split(/\s+/),
  );
  return ids.some((id) => id === "debian" || id === "ubuntu");
}

/** Runs a command and resolves with its exit code and the tail of its output. */
export function run(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-4000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.on("error", (error) => resolve({ code: null, output: error.message }));
    child.on("close", (code) => resolve({ code, output }));
  });
}

/**
 * Why apt-get cannot be used here, or the tools to use it with.
 * @param find - looks a program up on the resolver's search path.
 */
export async function aptTools(
  osReleaseFile: string,
  find: (name: string) => string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<AptTools | string> {
  if (process.platform !== "linux") return `not Linux (${process.platform})`;
  if (!isDebianLike(osReleaseFile)) return `not Debian or Ubuntu (${osReleaseFile})`;
  const aptGet = find("apt-get");
  if (aptGet === undefined) return "apt-get not found";
  if (process.getuid?.() === 0) return { aptGet, sudo: undefined };
  const sudo = find("sudo");
  if (sudo === undefined) return "not root and no sudo";
  const check = await run(sudo, ["-n", "true"], env);
  return check.code === 0 ? { aptGet, sudo } : "not root and sudo asks for a password";
}

/**
 * `apt-get install -y <pkg>`, after `apt-get update` when the package lists do not know it yet (a
 * fresh container has none).
 * @returns undefined on success, else why it failed.
 */
export async function aptInstall(
  tools: AptTools,
  env: NodeJS.ProcessEnv,
  pkg: string,
): Promise<string | undefined> {
  const aptEnv = { ...env, DEBIAN_FRONTEND: "noninteractive" };
  const aptGet = (...args: string[]) =>
    tools.sudo === undefined
      ? run(tools.aptGet, args, aptEnv)
      : run(tools.sudo, ["-n", "env", "DEBIAN_FRONTEND=noninteractive", tools.aptGet, ...args], aptEnv);
  if ((await aptGet("install", "-y", pkg)).code === 0) return undefined;
  const update = await aptGet("update");
  if (update.code !== 0) return `apt-get update failed: ${lastLine(update.output)}`;
  const install = await aptGet("install", "-y", pkg);
  return install.code === 0 ? undefined : `apt-get install failed: ${lastLine(install.output)}`;
}

function lastLine(output: string): string {
  const lines = output.trim().split("\n");
  return lines[lines.length - 1] ?? "(no output)";
}
