// The simulator's own routes under `/v1/sim/`: its totals, the request log, a reset, and a health
// check. They answer at once, are not logged, and need no API key.
import { SimApiError } from "../errors.js";
import { type Exchange, sendError, sendJson } from "../exchange.js";
import { type RequestLogEntry, withoutBody } from "../log.js";
import type { SimStats } from "../sim-events.js";

/** What the `/v1/sim/` routes need of the server. */
export interface SimRouteContext {
  stats(): SimStats;
  /** The request log in memory, oldest first. */
  requests(): RequestLogEntry[];
  reset(): void;
}

/**
 * `GET /v1/sim/stats`, `GET /v1/sim/health`, `GET /v1/sim/requests[?limit=N][&bodies=0]` (the last N
 * entries, without their bodies) and `POST /v1/sim/reset`; anything else under `/v1/sim/` is a 404.
 */
export function simRoute(context: SimRouteContext, ex: Exchange, path: string, url: URL): void {
  const method = ex.req.method ?? "GET";
  if (path === "/v1/sim/stats" && method === "GET") sendJson(ex, 200, context.stats());
  else if (path === "/v1/sim/health" && method === "GET") sendJson(ex, 200, { ok: true });
  else if (path === "/v1/sim/requests" && method === "GET") {
    const limit = Number(url.searchParams.get("limit") ?? "0");
    const bodies = url.searchParams.get("bodies") !== "0" && url.searchParams.get("bodies") !== "false";
    let data = context.requests();
    if (limit > 0) data = data.slice(-limit);
    if (!bodies) data = data.map(withoutBody);
    sendJson(ex, 200, { data });
  } else if (path === "/v1/sim/reset" && method === "POST") {
    context.reset();
    sendJson(ex, 200, { ok: true });
  } else sendError(ex, new SimApiError("not_found_error", `Not found: ${method} ${path}`));
}
