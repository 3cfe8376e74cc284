// What the page is told at /config.json: where NATS listens for WebSocket clients, the subject prefix,
// and the credentials to connect with. Shared by the server (which writes it) and the page (which reads it).

/** The page's connection settings, served as `/config.json`. */
export interface WebPageConfig {
  /** NATS WebSocket URLs (`ws://…` on loopback, `wss://…` across a network). */
  servers: string[];
  /** forkd's subject prefix (`agent` unless the installation chose another). */
  prefix: string;
  /** NATS user; the `observer` user of deploy/nats/accounts.conf for a read-only view. */
  user?: string;
  /** NATS password of `user`. */
  pass?: string;
  /** NATS token, for servers that authenticate by token. */
  token?: string;
  /**
   * The parent's owner key (`FORKD_OWNER_KEY`), when abort buttons should be able to stop runs whose
   * specs carry an owner token. Only ever served on loopback; never set it for a shared page.
   */
  ownerKey?: string;
}

const URL_PATTERN = /^wss?:\/\/[^\s]+$/;
const PREFIX_PATTERN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/**
 * Why `config` cannot be given to the page, or undefined when it can: every server a `ws://` or
 * `wss://` URL, a valid subject prefix.
 */
export function webConfigProblem(config: WebPageConfig): string | undefined {
  if (config.servers.length === 0) return "no NATS WebSocket URL";
  const bad = config.servers.find((server) => !URL_PATTERN.test(server));
  if (bad !== undefined) return `${JSON.stringify(bad)} is not a ws:// or wss:// URL`;
  if (!PREFIX_PATTERN.test(config.prefix)) return `${JSON.stringify(config.prefix)} is not a subject prefix`;
  return undefined;
}
