// Typed errors of the web view's server: one base class, one code per failure.
import { ForkdError } from "@forkd/protocol";

/** What can go wrong while serving the page. */
export type WebErrorCode = "web_assets_missing" | "web_listen_failed" | "invalid_web_config";

/** Base class of every error thrown by `@forkd/web`. */
export class WebError extends ForkdError<WebErrorCode> {
  override readonly name = "WebError";
  readonly code: WebErrorCode;
  readonly retryable: boolean;

  /**
   * @param code - the failure's {@link WebErrorCode}.
   * @param message - a sentence a person can act on.
   */
  constructor(code: WebErrorCode, message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, options);
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}
