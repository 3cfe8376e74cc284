// The page's server: the built static files and /config.json, on loopback by default. Nothing else:
// the page talks to NATS itself, over WebSocket.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { isIP } from "node:net";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type WebPageConfig, webConfigProblem } from "./config.js";
import { WebError } from "./errors.js";

/** The files the page is made of, and their types. Anything else is a 404. */
const FILES: Record<string, { file: string; type: string }> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/index.html": { file: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/app.css": { file: "app.css", type: "text/css; charset=utf-8" },
  "/favicon.svg": { file: "favicon.svg", type: "image/svg+xml" },
};

// Same-origin scripts and styles only (no CDN); WebSocket connections to any NATS the config names.
const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

/**
 * Where the built page is: `dist/public` of this package (from `src/` while tests run the sources).
 */
export function webAssetsDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return basename(here) === "src" ? join(here, "..", "dist", "public") : join(here, "public");
}

/** Options of {@link startWebServer}. */
export interface WebServerOptions {
  /** What the page is told: NATS WebSocket URLs, prefix, credentials. */
  page: WebPageConfig;
  /**
   * Interface to listen on. Keep it on loopback unless a proxy with TLS and authentication sits in
   * front: `/config.json` hands out the credentials it was given.
   * @default "127.0.0.1"
   */
  host?: string;
  /**
   * Port; 0 picks a free one.
   * @default 4280
   */
  port?: number;
  /** The built page. @default {@link webAssetsDir} */
  assetsDir?: string;
  /**
   * Host names, besides IP addresses, `localhost` and `*.localhost`, the page may be asked for by:
   * the name a proxy in front forwards in `Host`. Any other name is answered 421 (DNS rebinding).
   * @default []
   */
  allowedHosts?: readonly string[];
}

/**
 * Whether a request's `Host` names the server in a way no other site can take over. A site that
 * re-points its own name at this machine (DNS rebinding) is same-origin with itself, and its script
 * could read `/config.json` — credentials and owner key — through the browser. An IP address
 * cannot be re-pointed, `localhost` and `*.localhost` are this machine to every browser, and the
 * operator's `allowedHosts` are theirs; every other name is refused.
 */
function hostAllowed(header: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (header === undefined || header === "") return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${header}`).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (isIP(hostname.startsWith("[") ? hostname.slice(1, -1) : hostname) !== 0) return true;
  return hostname === "localhost" || hostname.endsWith(".localhost") || allowed.has(hostname);
}

/** A running page server. */
export interface RunningWebServer {
  /** `http://HOST:PORT/`. */
  readonly url: string;
  readonly port: number;
  /** Resolves when a page first asked for `/config.json`: someone opened it and is about to connect. */
  readonly visited: Promise<void>;
  /** Stops listening and closes open connections. */
  close(): Promise<void>;
}

/**
 * Serves the page and its `/config.json`.
 * @throws {@link WebError} `invalid_web_config` for a config the page could not use,
 *   `web_assets_missing` when the package was not built, `web_listen_failed` when the port is taken.
 */
export async function startWebServer(options: WebServerOptions): Promise<RunningWebServer> {
  const problem = webConfigProblem(options.page);
  if (problem !== undefined) throw new WebError("invalid_web_config", `cannot serve the page: ${problem}`);
  const assetsDir = options.assetsDir ?? webAssetsDir();
  if (!existsSync(join(assetsDir, "index.html")) || !existsSync(join(assetsDir, "app.js"))) {
    throw new WebError(
      "web_assets_missing",
      `the web page is not built (no index.html and app.js in ${assetsDir}); run pnpm build`,
    );
  }
  const configBody = JSON.stringify(options.page);
  let markVisited: () => void = () => undefined;
  const visited = new Promise<void>((resolve) => {
    markVisited = resolve;
  });
  const host = options.host ?? "127.0.0.1";
  const allowedHosts = new Set((options.allowedHosts ?? []).map((name) => name.toLowerCase()));
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    void answer(request, response);
  });
  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!hostAllowed(request.headers.host, allowedHosts)) {
      response.writeHead(421, { "Content-Type": "text/plain; charset=utf-8", ...SECURITY_HEADERS });
      response.end("misdirected request: this page answers to an IP address or localhost only\n");
      return;
    }
    const path = new URL(request.url ?? "/", "http://page").pathname;
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { Allow: "GET, HEAD", ...SECURITY_HEADERS }).end();
      return;
    }
    if (path === "/config.json") {
      markVisited();
      response.writeHead(200, {
        "Content-Type": "application/json; charset=utf-8",
        "Cache-Control": "no-store",
        ...SECURITY_HEADERS,
      });
      response.end(request.method === "HEAD" ? undefined : configBody);
      return;
    }
    const entry = FILES[path];
    if (entry === undefined) {
      response.writeHead(404, { "Content-Type": "text/plain; charset=utf-8", ...SECURITY_HEADERS });
      response.end("not found\n");
      return;
    }
    try {
      const body = await readFile(join(assetsDir, entry.file));
      response.writeHead(200, {
        "Content-Type": entry.type,
        "Cache-Control": "no-cache",
        ...SECURITY_HEADERS,
      });
      response.end(request.method === "HEAD" ? undefined : body);
    } catch {
      response.writeHead(404, { "Content-Type": "text/plain; charset=utf-8", ...SECURITY_HEADERS });
      response.end("not found\n");
    }
  }
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) =>
      reject(
        new WebError(
          "web_listen_failed",
          `cannot listen on ${host}:${options.port ?? 4280}: ${error.message}`,
          {
            cause: error,
          },
        ),
      ),
    );
    server.listen(options.port ?? 4280, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : (options.port ?? 4280);
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    port,
    visited,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
