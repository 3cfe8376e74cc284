// The provider's "slow down" shared by every daemon of one account: a 429 or 529 that one daemon gets
// holds that model's requests on all of them, until the time the provider named, instead of each
// daemon hammering the provider alone and finding out with a refusal of its own. Core NATS: a lost
// notice only costs the refusal it would have spared.
import { createHash } from "node:crypto";
import { LocalThrottle, type ProviderThrottle } from "@forkd/llm";
import { PROTOCOL_VERSION, ProtocolError, providerThrottleCodec } from "@forkd/protocol";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { DaemonLogger } from "./logger.js";
import type { DaemonMetrics } from "./metrics.js";

/** Which provider account a daemon calls: a hash of its base URL and API key, never the key. */
export function providerKeyId(baseURL: string | undefined, apiKey: string | undefined): string {
  return createHash("sha256")
    .update(`${baseURL ?? "https://api.anthropic.com"}\0${apiKey ?? ""}`)
    .digest("hex")
    .slice(0, 16);
}

/** Options of {@link SharedThrottle}. */
export interface SharedThrottleOptions {
  nc: NatsConnection;
  /** `forkSubjects(prefix).providerThrottle`. */
  subject: string;
  daemonId: string;
  /** {@link providerKeyId} of this daemon's account: notices for other accounts are ignored. */
  keyId: string;
  logger: DaemonLogger;
  metrics?: DaemonMetrics | undefined;
}

/** A {@link ProviderThrottle} that tells the other daemons and hears them. */
export class SharedThrottle implements ProviderThrottle {
  readonly #local = new LocalThrottle();
  readonly #options: SharedThrottleOptions;
  readonly #subscription: Subscription;

  constructor(options: SharedThrottleOptions) {
    this.#options = options;
    this.#subscription = options.nc.subscribe(options.subject, {
      callback: (error, message) => {
        if (error) return;
        try {
          const notice = providerThrottleCodec.decode(message.data);
          if (notice.key_id !== options.keyId || notice.daemon_id === options.daemonId) return;
          // LocalThrottle caps a hold at 60 s: a forged notice can delay calls that long, no longer.
          this.#local.report(notice.model, notice.until);
        } catch (decodeError) {
          const code = decodeError instanceof ProtocolError ? decodeError.code : "internal";
          options.metrics?.refusedControls.inc({ kind: code });
        }
      },
    });
  }

  clearance(model: string, signal?: AbortSignal): Promise<void> {
    return this.#local.clearance(model, signal);
  }

  report(model: string, until: number): void {
    this.#local.report(model, until);
    const { nc, subject, daemonId, keyId, logger } = this.#options;
    try {
      nc.publish(
        subject,
        providerThrottleCodec.encode({
          v: PROTOCOL_VERSION,
          daemon_id: daemonId,
          key_id: keyId,
          model,
          until,
        }),
      );
    } catch (error) {
      logger.debug({ err: error }, "throttle notice not sent");
    }
  }

  /** Stops hearing the other daemons. */
  close(): void {
    this.#subscription.unsubscribe();
  }
}
