// Reads a server's HTTP monitoring endpoints (/healthz, /jsz). Used where the server offers no event
// (JetStream meta-leader election, a restarted node catching up), always under a deadline.

/** The part of `/jsz` the harness reads. */
export interface JszInfo {
  server_name?: string;
  meta_cluster?: { name?: string; leader?: string; cluster_size?: number };
  account_details?: Array<{
    name?: string;
    stream_detail?: Array<{
      name?: string;
      cluster?: { leader?: string };
      state?: { messages?: number; last_seq?: number };
    }>;
  }>;
}

async function get(url: string, signal: AbortSignal | undefined): Promise<Response> {
  const timeout = AbortSignal.timeout(2_000);
  return fetch(url, { signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]) });
}

/** `GET /jsz`, with `query` appended (e.g. "accounts=true&streams=true"). @internal */
export async function fetchJsz(monitorUrl: string, query = "", signal?: AbortSignal): Promise<JszInfo> {
  const response = await get(`${monitorUrl}/jsz${query ? `?${query}` : ""}`, signal);
  if (!response.ok) throw new Error(`GET ${monitorUrl}/jsz answered ${response.status}`);
  return (await response.json()) as JszInfo;
}

/** `GET /healthz`: true when the server says it is healthy (JetStream current, in a cluster). @internal */
export async function isHealthy(monitorUrl: string, signal?: AbortSignal): Promise<boolean> {
  const response = await get(`${monitorUrl}/healthz`, signal);
  const body = (await response.json()) as { status?: string };
  return response.ok && body.status === "ok";
}
