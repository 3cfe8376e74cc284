// The proxy's errors, under forkd's one error base (`ForkdError`, @forkd/protocol).
import { ForkdError } from "@forkd/protocol";

/** What went wrong in the proxy or with it. */
export type ProxyErrorCode =
  /** A streamed reply could not be reassembled (the bytes still went to the agent unchanged). */
  | "stream_unreadable"
  /** A proxy's control API did not answer, or refused the token. */
  | "proxy_unavailable";

/** An error of `@forkd/proxy`. */
export class ProxyError extends ForkdError<ProxyErrorCode> {
  override readonly name: string = "ProxyError";
  readonly code: ProxyErrorCode;
  readonly retryable: boolean;

  constructor(code: ProxyErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.code = code;
    this.retryable = code === "proxy_unavailable";
  }
}

/** Why a stream could not be reassembled. */
export class StreamAssemblyError extends ProxyError {
  override readonly name = "StreamAssemblyError";

  constructor(message: string, options: { cause?: unknown } = {}) {
    super("stream_unreadable", message, options);
  }
}

/** Why the proxy could not be asked. */
export class ProxyUnavailableError extends ProxyError {
  override readonly name = "ProxyUnavailableError";

  constructor(message: string, options: { cause?: unknown } = {}) {
    super("proxy_unavailable", message, options);
  }
}
