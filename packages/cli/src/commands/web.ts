// `forkd web`: serves the live web view (@forkd/web's built page) on loopback and tells it where NATS
// listens for WebSocket clients and with which credentials. The page reads NATS itself; this process
// only serves files. The first stdout line is the page's URL.
import { readFile } from "node:fs/promises";
import { startWebServer, type WebPageConfig } from "@forkd/web";
import type { CommandContext } from "../context.js";
import { UsageError } from "../errors.js";
import { whenAborted } from "../interrupt.js";
import { writeLine } from "../io.js";
import { loadOwnerKey, NATS_FLAGS, type NatsFlagValues, natsTarget } from "../nats.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine, parseInteger } from "../options.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  "nats-ws": { type: "string", multiple: true },
  // The credentials a browser can use (no nkey, creds or TLS client files), spelled as everywhere.
  "nats-user": NATS_FLAGS["nats-user"],
  "nats-pass": NATS_FLAGS["nats-pass"],
  "nats-pass-file": NATS_FLAGS["nats-pass-file"],
  "nats-token": NATS_FLAGS["nats-token"],
  prefix: NATS_FLAGS.prefix,
  host: { type: "string" },
  "allowed-host": { type: "string", multiple: true },
  port: { type: "string" },
  controls: { type: "boolean" },
  json: { type: "boolean" },
} as const;

/** Where a NATS server listens for WebSocket clients unless told otherwise (deploy/nats's port). */
export const DEFAULT_NATS_WS_URL = "ws://127.0.0.1:4443";
/** The port the page is served on unless told otherwise. */
export const DEFAULT_WEB_PORT = 4280;

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

/** What the page is told, from flags and the environment (`FORKD_NATS_WS_URL`, `NATS_USER`, …). */
export async function pageConfigOf(
  values: {
    "nats-ws"?: string[] | undefined;
    controls?: boolean | undefined;
  } & Pick<NatsFlagValues, "nats-user" | "nats-pass" | "nats-pass-file" | "nats-token" | "prefix">,
  env: NodeJS.ProcessEnv,
): Promise<WebPageConfig> {
  const fromFlags = (values["nats-ws"] ?? []).flatMap((value) => value.split(",")).map((v) => v.trim());
  const fromEnv = (env.FORKD_NATS_WS_URL ?? "").split(",").map((v) => v.trim());
  const servers = [fromFlags, fromEnv, [DEFAULT_NATS_WS_URL]]
    .find((list) => list.some(Boolean))!
    .filter(Boolean);
  const bad = servers.find((server) => !/^wss?:\/\/\S+$/.test(server));
  if (bad !== undefined)
    throw new UsageError(`--nats-ws: ${JSON.stringify(bad)} is not a ws:// or wss:// URL`, {
      hint: "the page connects to NATS's websocket port (deploy/nats: 4443), not to its client port 4222",
    });
  // The credentials are resolved as every other command resolves them; the server list is not used.
  const target = natsTarget(values, env);
  const page: WebPageConfig = { servers, prefix: target.prefix };
  if (target.nats.user !== undefined) page.user = target.nats.user;
  if (target.nats.pass !== undefined) page.pass = target.nats.pass;
  if (target.nats.passFile !== undefined) page.pass = (await readFile(target.nats.passFile, "utf8")).trim();
  if (target.nats.token !== undefined) page.token = target.nats.token;
  if (values.controls === true) page.ownerKey = await loadOwnerKey(env);
  return page;
}

/** Serves the page until SIGINT/SIGTERM. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("web", args, OPTIONS);
  expectPositionals("web", positionals, { min: 0, max: 0, names: "" });
  const host = values.host ?? "127.0.0.1";
  const port =
    values.port === undefined ? DEFAULT_WEB_PORT : parseInteger("port", values.port, { min: 0, max: 65535 });
  const page = await pageConfigOf(values, context.io.env);
  if (
    !LOOPBACK.has(host) &&
    (page.pass !== undefined || page.token !== undefined || page.ownerKey !== undefined)
  ) {
    throw new UsageError(
      `--host ${host} would hand the NATS credentials in /config.json to anyone who can reach it`,
      {
        hint: "serve on loopback (the default) and reach it through an SSH tunnel or a proxy with its own authentication",
      },
    );
  }
  const allowedHosts = values["allowed-host"] ?? [];
  const server = await startWebServer({ page, host, port, allowedHosts }).catch((error: unknown) => {
    const code = (error as { code?: string }).code;
    if (code === "web_listen_failed") throw new UsageError((error as Error).message, { cause: error });
    throw error;
  });
  const out = context.io.stdout;
  if (values.json === true)
    writeLine(out, JSON.stringify({ url: server.url, port: server.port, nats_ws: page.servers }));
  else {
    writeLine(out, server.url);
    writeLine(
      context.io.stderr,
      `forkd web: serving the page on ${server.url}; it connects to ${page.servers.join(", ")}${page.user === undefined ? "" : ` as ${page.user}`}, prefix ${page.prefix}. Ctrl-C to stop.`,
    );
  }
  await whenAborted(context.interruption.signal);
  await server.close();
  return 0;
}
