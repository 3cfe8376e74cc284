// `pnpm with-node <major> <command…>`: runs a command with another Node.js major first on PATH, so
// that forkd is tested on every Node line it supports (package.json "engines"; Node 22 and 24 beside
// the 20 a machine may have). The runtime comes from the npm registry (the `node-<os>-<arch>`
// packages hold the official binaries), the route that already provides everything else here, and is
// kept in forkd's cache (~/.cache/forkd/node/<version>, as nats-server is) for the next run.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { constants } from "node:os";
import { delimiter, join } from "node:path";
import { forkdCacheDir } from "@forkd/local-nats";
import { isAtLeast, parseVersion, type Version } from "@forkd/local-nats/internal";

/** The Node majors forkd supports (package.json "engines" names the oldest). */
const SUPPORTED_MAJORS = ["20", "22", "24"];

function fail(message: string): never {
  console.error(`with-node: ${message}`);
  process.exit(2);
}

// pnpm hands its own settings to scripts as npm_config_* variables, which npm warns are not its own.
const npmEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith("npm_config_")),
);

function npm(args: readonly string[], cwd?: string): string {
  const result = spawnSync("npm", args, {
    cwd,
    env: npmEnv,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (result.status !== 0) fail(`npm ${args.join(" ")} exited ${result.status}`);
  return result.stdout.trim();
}

/** The newest published version of `major` of the runtime package (e.g. `24.21.0`). */
function newestOf(packageName: string, major: string): string {
  const versions = JSON.parse(npm(["view", `${packageName}@${major}`, "version", "--json"])) as
    | string
    | string[];
  const list = typeof versions === "string" ? [versions] : versions;
  // The registry lists them in publication order, not by version.
  let newest: { text: string; version: Version } | undefined;
  for (const text of list) {
    const version = parseVersion(text);
    if (version !== undefined && (newest === undefined || isAtLeast(version, newest.version)))
      newest = { text, version };
  }
  if (newest === undefined) fail(`the registry has no ${packageName}@${major}`);
  return newest.text;
}

/** The `bin` folder of Node `version`, fetched from the registry unless already cached. */
function nodeBin(packageName: string, version: string): string {
  const home = join(forkdCacheDir(process.env), "node", version);
  const bin = join(home, "package", "bin");
  if (existsSync(join(bin, "node"))) return bin;
  // Unpacked beside the cache entry and renamed into place: an interrupted fetch leaves no half a runtime.
  const staging = `${home}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const tarball = npm(["pack", "--silent", `${packageName}@${version}`], staging)
    .split("\n")
    .at(-1)!;
  const untar = spawnSync("tar", ["xzf", tarball], { cwd: staging, stdio: "inherit" });
  if (untar.status !== 0) fail(`could not unpack ${tarball}`);
  rmSync(join(staging, tarball));
  rmSync(home, { recursive: true, force: true });
  renameSync(staging, home);
  return bin;
}

const [major, ...command] = process.argv.slice(2);
if (major === undefined || command.length === 0 || !/^\d+$/.test(major)) {
  fail(
    `usage: pnpm with-node <major> <command…>   (e.g. pnpm with-node 24 pnpm test; supported: ${SUPPORTED_MAJORS.join(", ")})`,
  );
}
if (!SUPPORTED_MAJORS.includes(major))
  console.warn(`with-node: Node ${major} is not one forkd supports (${SUPPORTED_MAJORS.join(", ")})`);
const packageName = `node-${process.platform}-${process.arch}`;
const version = newestOf(packageName, major);
const bin = nodeBin(packageName, version);
console.error(`with-node: Node ${version} (${bin})`);
// First on PATH for the command and everything it starts: pnpm, vitest's workers, daemon processes.
const child = spawn(command[0]!, command.slice(1), {
  stdio: "inherit",
  env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ""}` },
});
child.on("exit", (code, signal) =>
  process.exit(code ?? 128 + (signal === null ? 0 : constants.signals[signal])),
);
