// Who may call the simulator, and the id a key is logged under (never the key itself).
import { createHash } from "node:crypto";
import { SimApiError } from "./errors.js";
import { apiKeyOf, type Exchange } from "./exchange.js";

/** The ids kept before the table is cleared (a client cycling keys cannot grow it without bound). */
const MAX_KEY_IDS = 10_000;

/** Checks API keys against the allowed ones and names each key by a short hash of it. */
export class ApiKeys {
  readonly #allowed: ReadonlySet<string> | undefined;
  readonly #ids = new Map<string, string>();

  /** @param allowed - the keys that may call; absent: any non-empty key. */
  constructor(allowed?: readonly string[]) {
    this.#allowed = allowed === undefined ? undefined : new Set(allowed);
  }

  /** `key_` and the first 12 hex digits of the key's SHA-256. */
  idOf(key: string): string {
    let id = this.#ids.get(key);
    if (id === undefined) {
      if (this.#ids.size > MAX_KEY_IDS) this.#ids.clear();
      id = `key_${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
      this.#ids.set(key, id);
    }
    return id;
  }

  /**
   * The request's key (`key` when the route read it itself, else `x-api-key` or a bearer token), its
   * id recorded on the log entry.
   * @throws {@link SimApiError} `authentication_error` when there is none or it is not allowed.
   */
  authenticate(ex: Exchange, key: string | undefined = apiKeyOf(ex.req)): string {
    if (key === undefined) throw new SimApiError("authentication_error", "x-api-key header is required");
    if (this.#allowed !== undefined && !this.#allowed.has(key))
      throw new SimApiError("authentication_error", "invalid x-api-key");
    ex.entry.keyId = this.idOf(key);
    return key;
  }
}
