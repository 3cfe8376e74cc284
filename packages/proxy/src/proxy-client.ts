// The control API of a running proxy, from another process: how `forkd mcp` finds the turn a fork
// call came from.
import { ProxyUnavailableError } from "./errors.js";
import { CONTROL_PREFIX, type TurnJson } from "./proxy-server.js";
import type { ToolCall } from "./turn-apis.js";
import type { ToolCallQuery } from "./turn-store.js";

/** Where a proxy's control API is and its bearer token. */
export interface ProxyEndpoint {
  url: string;
  controlToken: string;
}

/** A recorded turn and the call of its reply that matched. */
export interface FoundToolCall {
  turn: TurnJson;
  toolUse: ToolCall;
}

/** A client of a proxy's control API. */
export class ProxyClient {
  readonly #endpoint: ProxyEndpoint;

  constructor(endpoint: ProxyEndpoint) {
    this.#endpoint = endpoint;
  }

  /**
   * The newest recorded turn whose reply holds a call matching `query`, waiting up to `waitMs` for it
   * to be recorded; undefined when none.
   * @throws {@link ProxyUnavailableError} when the proxy does not answer or refuses the token.
   */
  async findToolCall(query: ToolCallQuery & { waitMs?: number }): Promise<FoundToolCall | undefined> {
    const response = await this.#call("find-tool-call", { method: "POST", body: JSON.stringify(query) });
    if (response.status === 404) return undefined;
    const body = (await response.json()) as { turn: TurnJson; tool_use: FoundToolCall["toolUse"] };
    return { turn: body.turn, toolUse: body.tool_use };
  }

  /** Resolves when the proxy answers with this token. @throws {@link ProxyUnavailableError} */
  async health(): Promise<{ sessions: number; bytes: number }> {
    return (await (await this.#call("health", { method: "GET" })).json()) as {
      sessions: number;
      bytes: number;
    };
  }

  async #call(route: string, init: { method: string; body?: string }): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(new URL(`${CONTROL_PREFIX}${route}`, this.#endpoint.url), {
        ...init,
        headers: {
          authorization: `Bearer ${this.#endpoint.controlToken}`,
          "content-type": "application/json",
        },
      });
    } catch (error) {
      throw new ProxyUnavailableError(
        `forkd proxy at ${this.#endpoint.url} did not answer: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    if (response.ok || response.status === 404) return response;
    const text = await response.text();
    throw new ProxyUnavailableError(
      `forkd proxy at ${this.#endpoint.url} answered ${response.status}: ${text.slice(0, 300)}`,
    );
  }
}
