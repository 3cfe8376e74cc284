// The daemon's own secrets never leave it in a tool result: whatever a tool printed (a file the
// model found, a command that read an environment) is scrubbed of them before it becomes an event
// that every parent and observer of the account can read.

/** Variable names that hold a secret: `…KEY`, `…TOKEN`, `…SECRET`, `…PASSWORD`, `…PASS`, `…CREDENTIALS`. */
const SECRET_NAME = /(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?)$/i;
/** Shorter values would match too much ordinary text to be worth scrubbing. */
const MIN_SECRET_LENGTH = 8;

/** A named secret value. */
export interface NamedSecret {
  name: string;
  value: string;
}

/** The secrets in an environment: variables with a secret's name and a value at least 8 characters long. */
export function secretsOf(env: NodeJS.ProcessEnv): NamedSecret[] {
  return Object.entries(env)
    .filter(
      ([name, value]) => SECRET_NAME.test(name) && value !== undefined && value.length >= MIN_SECRET_LENGTH,
    )
    .map(([name, value]) => ({ name, value: value as string }))
    .sort((a, b) => b.value.length - a.value.length); // a secret containing another is replaced whole
}

/**
 * Secrets recognised by their shape, whoever they belong to: an Anthropic API key (`sk-ant-…`) and a
 * NATS NKey seed (`S` + a key-type letter + 56 base32 characters, as in `.creds` files). A model
 * that found one in a file the daemon can read must not hand it to every parent of the account.
 */
const SECRET_SHAPES: readonly { name: string; pattern: RegExp; couldMatch: (text: string) => boolean }[] = [
  // `couldMatch` spares the pattern's scan where it cannot match: its literal start, its length.
  {
    name: "anthropic key",
    pattern: /sk-ant-[A-Za-z0-9_-]{16,}/g,
    couldMatch: (text) => text.includes("sk-ant-"),
  },
  { name: "nkey seed", pattern: /\bS[UAONCPX][A-Z2-7]{56}\b/g, couldMatch: (text) => text.length >= 58 },
];

/** The secrets the daemon's configuration holds besides its environment (see {@link registerDaemonSecrets}). */
let registered: readonly NamedSecret[] = [];

/**
 * Adds secrets the daemon holds outside its environment — passwords and tokens from its
 * configuration file, the contents of its password, seed and creds files, credentials in URLs — to
 * {@link daemonSecrets}. Process-wide, like the environment they complement; a daemon calls it once
 * at start, before its first run.
 */
export function registerDaemonSecrets(secrets: readonly NamedSecret[]): void {
  const known = new Set(registered.map((secret) => secret.value));
  const added = secrets.filter(
    (secret) => secret.value.length >= MIN_SECRET_LENGTH && !known.has(secret.value),
  );
  registered = [...registered, ...added];
}

/** The daemon's secrets: those of its environment ({@link secretsOf}) and those registered from its configuration. */
export function daemonSecrets(env: NodeJS.ProcessEnv = process.env): NamedSecret[] {
  const fromEnv = secretsOf(env);
  const values = new Set(fromEnv.map((secret) => secret.value));
  return [...fromEnv, ...registered.filter((secret) => !values.has(secret.value))].sort(
    (a, b) => b.value.length - a.value.length,
  );
}

/** The shortest text a shape of {@link SECRET_SHAPES} matches: `sk-ant-` and 16 characters. */
export const SHORTEST_SHAPED_SECRET = 23;

/** The length below which a text holds none of `secrets` and no secret shape. */
function shortestSecretIn(secrets: readonly NamedSecret[]): number {
  let shortest = SHORTEST_SHAPED_SECRET;
  for (const { value } of secrets) if (value.length < shortest) shortest = value.length;
  return shortest;
}

function scrubBelow(text: string, secrets: readonly NamedSecret[], shortest: number): string {
  // Every event's keys and short values pass through here: most cannot hold a secret at all.
  if (text.length < shortest) return text;
  let scrubbed = text;
  for (const { name, value } of secrets) {
    if (scrubbed.includes(value)) scrubbed = scrubbed.split(value).join(`[redacted ${name}]`);
  }
  for (const { name, pattern, couldMatch } of SECRET_SHAPES) {
    if (couldMatch(scrubbed)) scrubbed = scrubbed.replace(pattern, `[redacted ${name}]`);
  }
  return scrubbed;
}

/**
 * `text` with every occurrence of each secret replaced by `[redacted <NAME>]`, and every value shaped
 * like an API key or an NKey seed by `[redacted <kind>]`.
 */
export function scrubSecrets(text: string, secrets: readonly NamedSecret[]): string {
  return scrubBelow(text, secrets, shortestSecretIn(secrets));
}

/**
 * `value` with {@link scrubSecrets} applied to every string inside it (keys included); the same
 * object when nothing held a secret, so the common case copies nothing (every event a daemon
 * publishes passes through here).
 */
export function scrubSecretsDeep<T>(value: T, secrets: readonly NamedSecret[]): T {
  const shortest = shortestSecretIn(secrets);
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return scrubBelow(v, secrets, shortest);
    if (Array.isArray(v)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const item = walk(v[i]);
        if (copy === undefined && item !== v[i]) copy = v.slice(0, i);
        copy?.push(item);
      }
      return copy ?? v;
    }
    if (v !== null && typeof v === "object") {
      const record = v as Record<string, unknown>;
      const keys = Object.keys(record);
      let copy: [string, unknown][] | undefined;
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!;
        const member = record[key];
        const scrubbedKey = scrubBelow(key, secrets, shortest);
        const scrubbedMember = walk(member);
        if (copy === undefined && (scrubbedKey !== key || scrubbedMember !== member))
          copy = keys.slice(0, i).map((kept) => [kept, record[kept]]);
        copy?.push([scrubbedKey, scrubbedMember]);
      }
      return copy ? Object.fromEntries(copy) : v;
    }
    return v;
  };
  return walk(value) as T;
}
