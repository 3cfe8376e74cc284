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

/** `text` with every occurrence of each secret replaced by `[redacted <NAME>]`. */
export function scrubSecrets(text: string, secrets: readonly NamedSecret[]): string {
  let scrubbed = text;
  for (const { name, value } of secrets) {
    if (scrubbed.includes(value)) scrubbed = scrubbed.split(value).join(`[redacted ${name}]`);
  }
  return scrubbed;
}

/**
 * `value` with {@link scrubSecrets} applied to every string inside it (keys included); the same
 * object when nothing held a secret, so the common case copies nothing.
 */
export function scrubSecretsDeep<T>(value: T, secrets: readonly NamedSecret[]): T {
  if (secrets.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return scrubSecrets(v, secrets);
    if (Array.isArray(v)) {
      const items = v.map(walk);
      return items.some((item, i) => item !== v[i]) ? items : v;
    }
    if (v !== null && typeof v === "object") {
      let changed = false;
      const entries = Object.entries(v).map(([key, member]) => {
        const scrubbedKey = scrubSecrets(key, secrets);
        const scrubbedMember = walk(member);
        if (scrubbedKey !== key || scrubbedMember !== member) changed = true;
        return [scrubbedKey, scrubbedMember] as const;
      });
      return changed ? Object.fromEntries(entries) : v;
    }
    return v;
  };
  return walk(value) as T;
}
