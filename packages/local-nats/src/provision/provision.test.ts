// Every route locateNatsServer takes to a nats-server, tried hermetically: shims on a private
// search path stand in for nats-server, apt-get and sudo, and a loopback HTTP server stands in for
// the release download site. Nothing here touches the host's packages or the network.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { NatsServerUnavailableError } from "../errors.js";
import { locateNatsServer, type NatsLocateOptions } from "../locate.js";
import { cachedNatsServerPath, natsServerCacheRoot } from "./cache.js";
import { PINNED_NATS_SERVER_VERSION } from "./download.js";
import { isAtLeast, parseVersion } from "./version.js";

const root = mkdtempSync(join(tmpdir(), "forkd-provision-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let caseNo = 0;
/** A fresh directory per test: its own search path, cache, os-release and logs. */
function scratch() {
  caseNo += 1;
  const dir = join(root, `case-${caseNo}`);
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  const osRelease = join(dir, "os-release");
  writeFileSync(osRelease, 'PRETTY_NAME="Fedora Linux 40"\nID=fedora\n');
  const lines: string[] = [];
  const options: NatsLocateOptions = {
    env: { PATH: bin, HOME: dir },
    searchPath: bin,
    cacheDir: join(dir, "cache"),
    osReleaseFile: osRelease,
    platform: "linux",
    arch: "x64",
    log: (line) => lines.push(line),
  };
  return { dir, bin, osRelease, lines, options, aptLog: join(dir, "apt.log") };
}

function script(path: string, body: string): void {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

/** A stand-in nats-server that only answers `--version`. */
function fakeNatsServer(dir: string, version: string): string {
  const path = join(dir, "nats-server");
  script(path, `echo "nats-server: v${version}"`);
  return path;
}

/**
 * An apt-get that records its arguments and, on `install`, puts a nats-server in `bin` — but only
 * after an `update` when `needsUpdate` (a fresh container has no package lists).
 */
function aptGetShim(s: ReturnType<typeof scratch>, needsUpdate: boolean): void {
  const server = join(s.dir, "installed-nats-server");
  script(server, 'echo "nats-server: v2.9.10"');
  script(
    join(s.bin, "apt-get"),
    [
      "PATH=/usr/bin:/bin", // the resolver runs it with the test's bare search path
      `echo "$*" >> ${s.aptLog}`,
      `if [ "$1" = update ]; then touch ${s.dir}/updated; exit 0; fi`,
      needsUpdate
        ? `[ -f ${s.dir}/updated ] || { echo "E: Unable to locate package nats-server" >&2; exit 100; }`
        : "",
      `cp ${server} ${s.bin}/nats-server`,
    ].join("\n"),
  );
  // For a run as a user other than root: a password-less sudo.
  script(join(s.bin, "sudo"), '[ "$1" = -n ] && shift; exec "$@"');
}

// ---- a release site on loopback --------------------------------------------------------------

const version = PINNED_NATS_SERVER_VERSION;
const assetBase = `nats-server-v${version}-linux-amd64`;
let archive: Buffer;
let mode: "good" | "corrupt" | "truncated" | "missing" = "good";
let requests: string[] = [];
let site: Server;
let siteUrl: string;

beforeAll(async () => {
  const src = join(root, "release");
  mkdirSync(join(src, assetBase), { recursive: true });
  fakeNatsServer(join(src, assetBase), version);
  execFileSync("tar", ["-czf", join(root, "archive.tar.gz"), "-C", src, assetBase]);
  archive = readFileSync(join(root, "archive.tar.gz"));
  const sha = createHash("sha256").update(archive).digest("hex");
  const sums = `${"0".repeat(64)}  ${assetBase}.zip\n${sha}  ${assetBase}.tar.gz\n`;
  site = createServer((req, res) => {
    requests.push(req.url ?? "");
    if (mode === "missing" || !req.url?.startsWith(`/v${version}/`)) {
      res.writeHead(404).end("Not Found");
    } else if (req.url.endsWith("/SHA256SUMS")) {
      res.end(sums);
    } else if (req.url.endsWith(`/${assetBase}.tar.gz`)) {
      res.writeHead(200, { "content-length": archive.length });
      if (mode === "good") res.end(archive);
      else if (mode === "corrupt")
        res.end(Buffer.concat([archive.subarray(0, -1), Buffer.from([archive.at(-1)! ^ 1])]));
      else res.write(archive.subarray(0, archive.length >> 1), () => res.destroy());
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => site.close(() => resolve())));
beforeEach(() => {
  mode = "good";
  requests = [];
});

function withSite(s: ReturnType<typeof scratch>): NatsLocateOptions {
  return { ...s.options, env: { ...s.options.env, FORKD_NATS_RELEASE_URL: siteUrl } };
}

async function failure(options: NatsLocateOptions): Promise<NatsServerUnavailableError> {
  const error = await locateNatsServer(options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NatsServerUnavailableError);
  return error as NatsServerUnavailableError;
}

/** The cache holds no binary and no half-finished download. */
function expectEmptyCache(cacheDir: string): void {
  const entries = existsSync(natsServerCacheRoot(cacheDir)) ? readdirSync(natsServerCacheRoot(cacheDir)) : [];
  expect(entries).toEqual([]);
}

// ---- the routes -----------------------------------------------------------------------------

describe("an installed nats-server", () => {
  it("is found on the search path, with its version", async () => {
    const s = scratch();
    const path = fakeNatsServer(s.bin, "2.9.10");
    await expect(locateNatsServer(s.options)).resolves.toEqual({
      kind: "binary",
      path,
      version: "2.9.10",
      route: "PATH",
    });
    expect(s.lines).toEqual([]);
  });

  it("is taken from NATS_SERVER_BIN before the search path", async () => {
    const s = scratch();
    fakeNatsServer(s.bin, "2.9.10");
    mkdirSync(join(s.dir, "named"));
    const named = fakeNatsServer(join(s.dir, "named"), "2.10.1");
    const location = await locateNatsServer({
      ...s.options,
      env: { ...s.options.env, NATS_SERVER_BIN: named },
    });
    expect(location).toMatchObject({ path: named, version: "2.10.1", route: "NATS_SERVER_BIN" });
  });

  it("is accepted at exactly the minimum version and refused just below it, by name", async () => {
    const s = scratch();
    fakeNatsServer(s.bin, "2.9.0");
    await expect(locateNatsServer(s.options)).resolves.toMatchObject({ version: "2.9.0" });
    const old = scratch();
    const path = fakeNatsServer(old.bin, "2.8.99");
    const error = await failure({ ...old.options, env: { ...old.options.env, FORKD_NO_INSTALL: "1" } });
    expect(error.routes).toContainEqual({
      route: "PATH",
      outcome: `${path} is nats-server 2.8.99; forkd needs 2.9.0 or newer`,
    });
  });
});

describe("FORKD_NO_INSTALL=1", () => {
  it("installs nothing and lists every route in one error", async () => {
    const s = scratch();
    writeFileSync(s.osRelease, "ID=debian\n");
    aptGetShim(s, false);
    const error = await failure({ ...withSite(s), env: { ...withSite(s).env, FORKD_NO_INSTALL: "1" } });
    expect(error.routes.map((r) => r.route)).toEqual([
      "NATS_SERVER_BIN",
      "PATH",
      "cache",
      "apt-get",
      "download",
      "docker",
    ]);
    expect(error.message).toContain("apt-get: skipped: FORKD_NO_INSTALL=1");
    expect(error.message).toContain("docker: no Docker engine detected");
    expect(existsSync(s.aptLog)).toBe(false);
    expect(requests).toEqual([]);
    expect(s.lines).toEqual([]);
  });
});

describe("apt-get", () => {
  it("installs nats-server on Debian, saying so on one line", async () => {
    const s = scratch();
    writeFileSync(s.osRelease, 'ID=ubuntu\nID_LIKE="debian"\n');
    aptGetShim(s, false);
    const location = await locateNatsServer(withSite(s));
    expect(location).toMatchObject({ kind: "binary", path: join(s.bin, "nats-server"), route: "apt-get" });
    expect(readFileSync(s.aptLog, "utf8")).toBe("install -y nats-server\n");
    expect(s.lines).toEqual([expect.stringMatching(/^installing nats-server with apt-get \(once/)]);
    expect(requests).toEqual([]);
  });

  it("updates the package lists when they do not know nats-server yet", async () => {
    const s = scratch();
    writeFileSync(s.osRelease, "ID=debian\n");
    aptGetShim(s, true);
    await expect(locateNatsServer(withSite(s))).resolves.toMatchObject({ route: "apt-get" });
    expect(readFileSync(s.aptLog, "utf8")).toBe("install -y nats-server\nupdate\ninstall -y nats-server\n");
  });

  it("is not used outside Debian and Ubuntu", async () => {
    const s = scratch();
    aptGetShim(s, false);
    await expect(locateNatsServer(withSite(s))).resolves.toMatchObject({ route: "download" });
    expect(existsSync(s.aptLog)).toBe(false);
  });
});

describe("the release download", () => {
  it("verifies, caches, and is not downloaded again", async () => {
    const s = scratch();
    const location = await locateNatsServer(withSite(s));
    const cached = cachedNatsServerPath(s.options.cacheDir as string, version);
    expect(location).toEqual({ kind: "binary", path: cached, version, route: "download" });
    expect(requests).toEqual([`/v${version}/SHA256SUMS`, `/v${version}/${assetBase}.tar.gz`]);
    expect(s.lines[0]).toMatch(new RegExp(`^downloading nats-server ${version} for linux-x64`));
    expect(s.lines.at(-1)).toMatch(/: 100% of /);
    expect(readdirSync(natsServerCacheRoot(s.options.cacheDir as string))).toEqual([version]);

    requests = [];
    const lines = s.lines.length;
    await expect(locateNatsServer(withSite(s))).resolves.toMatchObject({ path: cached, route: "cache" });
    expect(requests).toEqual([]);
    expect(s.lines.length).toBe(lines);
  });

  it.each([
    ["corrupt", /SHA-256 of .* is [0-9a-f]{64}, the release's checksum file says [0-9a-f]{64}/],
    ["truncated", /terminated|ended after|aborted|closed/i],
    ["missing", /HTTP 404/],
  ] as const)("leaves nothing in the cache when the archive is %s", async (what, reason) => {
    const s = scratch();
    mode = what;
    const error = await failure(withSite(s));
    const download = error.routes.find((r) => r.route === "download");
    expect(download?.outcome).toMatch(reason);
    expect(download?.outcome).toContain(siteUrl);
    expectEmptyCache(s.options.cacheDir as string);
  });

  it("reports a cache directory it cannot write", async () => {
    const s = scratch();
    // A path under a regular file cannot be created, even by root (chmod does not stop root).
    writeFileSync(join(s.dir, "not-a-dir"), "");
    const error = await failure({ ...withSite(s), cacheDir: join(s.dir, "not-a-dir", "cache") });
    expect(error.routes.find((r) => r.route === "download")?.outcome).toMatch(/ENOTDIR/);
    expect(requests).toEqual([]);
  });

  it("says when there is no archive for the platform", async () => {
    const s = scratch();
    const error = await failure({ ...withSite(s), platform: "aix" });
    expect(error.routes.find((r) => r.route === "download")?.outcome).toContain(
      "no release archive for aix-x64",
    );
  });
});

describe("mode", () => {
  it("'binary' rules out the container fallback, and says so", async () => {
    const s = scratch();
    const error = await failure({
      ...withSite(s),
      mode: "binary",
      env: { ...withSite(s).env, FORKD_NO_INSTALL: "1" },
    });
    expect(error.routes.at(-1)).toEqual({ route: "docker", outcome: expect.stringContaining("ruled out") });
  });

  it("'container' looks for no binary", async () => {
    const s = scratch();
    fakeNatsServer(s.bin, "2.9.10");
    await expect(locateNatsServer({ ...s.options, mode: "container" })).resolves.toMatchObject({
      kind: "container",
    });
  });
});

describe("versions", () => {
  it("parses what nats-server prints and compares at the boundary", () => {
    expect(parseVersion("nats-server: v2.9.10")).toEqual([2, 9, 10]);
    expect(parseVersion("nats-server: dev")).toBeUndefined();
    expect(isAtLeast([2, 9, 0], [2, 9, 0])).toBe(true);
    expect(isAtLeast([2, 8, 99], [2, 9, 0])).toBe(false);
    expect(isAtLeast([3, 0, 0], [2, 9, 0])).toBe(true);
    expect(isAtLeast([2, 10, 0], [2, 9, 5])).toBe(true);
  });
});
