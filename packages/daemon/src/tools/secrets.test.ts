import { describe, expect, it } from "vitest";
import {
  daemonSecrets,
  registerDaemonSecrets,
  SHORTEST_SHAPED_SECRET,
  scrubSecrets,
  scrubSecretsDeep,
  secretsOf,
} from "./secrets.js";

describe("secretsOf", () => {
  it("takes variables named like secrets whose values have at least 8 characters, longest first", () => {
    const env = {
      ANTHROPIC_API_KEY: "sk-12345678901",
      NATS_TOKEN: "tok-5678",
      DB_PASSWORD: "pw-34567890",
      SHORT_SECRET: "1234567",
      GITHUB_TOKEN: undefined,
      MY_PASS: "pass-4567",
      AWS_CREDENTIALS: "creds-7890",
      api_key: "lower-case-1",
      KEYBOARD: "not-a-secret-name",
      TOKENS_USED: "not-a-secret-name",
      PATH: "/usr/bin:/bin",
    };
    expect(secretsOf(env)).toEqual([
      { name: "ANTHROPIC_API_KEY", value: "sk-12345678901" },
      { name: "api_key", value: "lower-case-1" },
      { name: "DB_PASSWORD", value: "pw-34567890" },
      { name: "AWS_CREDENTIALS", value: "creds-7890" },
      { name: "MY_PASS", value: "pass-4567" },
      { name: "NATS_TOKEN", value: "tok-5678" },
    ]);
  });
});

describe("registerDaemonSecrets and daemonSecrets", () => {
  it("adds configuration secrets once each, ignores short ones, and merges them with the environment's", () => {
    registerDaemonSecrets([
      { name: "nats.pass", value: "configured-1" },
      { name: "nats.token", value: "short" },
      { name: "again", value: "configured-1" },
    ]);
    registerDaemonSecrets([
      { name: "nats.pass", value: "configured-1" },
      { name: "url password", value: "a-much-longer-one" },
    ]);
    expect(daemonSecrets({ SAME_TOKEN: "configured-1", OTHER_KEY: "env-value-12345678" })).toEqual([
      { name: "OTHER_KEY", value: "env-value-12345678" },
      { name: "url password", value: "a-much-longer-one" },
      { name: "SAME_TOKEN", value: "configured-1" },
    ]);
  });
});

describe("scrubSecrets", () => {
  it("replaces every occurrence, a secret that contains another as a whole", () => {
    const secrets = secretsOf({ LONG_TOKEN: "abcdefgh-ijkl", SHORT_TOKEN: "abcdefgh" });
    expect(scrubSecrets("abcdefgh-ijkl and abcdefgh, abcdefgh", secrets)).toBe(
      "[redacted LONG_TOKEN] and [redacted SHORT_TOKEN], [redacted SHORT_TOKEN]",
    );
    expect(scrubSecrets("nothing here", secrets)).toBe("nothing here");
  });

  it("knows an API key and an NKey seed by their shape, at their exact lengths", () => {
    const key = `sk-ant-${"a".repeat(16)}`;
    expect(scrubSecrets(`${key} sk-ant-${"a".repeat(15)}`, [])).toBe(
      `[redacted anthropic key] sk-ant-${"a".repeat(15)}`,
    );
    const seed = `SU${"A".repeat(56)}`;
    expect(scrubSecrets(`${seed} SU${"A".repeat(55)} x${seed}`, [])).toBe(
      `[redacted nkey seed] SU${"A".repeat(55)} x${seed}`,
    );
  });
});

describe("scrubSecrets: texts too short to hold a secret", () => {
  it("scrubs a text exactly as long as the shortest secret, and one exactly as long as a shaped key", () => {
    const secrets = secretsOf({ A_TOKEN: "abcdefgh" });
    expect(scrubSecrets("abcdefgh", secrets)).toBe("[redacted A_TOKEN]");
    expect(scrubSecrets("abcdefg", secrets)).toBe("abcdefg");
    const key = `sk-ant-${"a".repeat(16)}`;
    expect(key).toHaveLength(SHORTEST_SHAPED_SECRET);
    expect(scrubSecrets(key, [])).toBe("[redacted anthropic key]");
    expect(scrubSecrets(key, secrets)).toBe("[redacted anthropic key]");
    expect(scrubSecrets(`sk-ant-${"Z_-9".repeat(4)}`, [])).toBe("[redacted anthropic key]");
  });

  it("finds an NKey seed in a text of exactly its length, and a secret shorter than the given minimum", () => {
    const seed = `SU${"A".repeat(56)}`;
    expect(scrubSecrets(seed, [])).toBe("[redacted nkey seed]");
    expect(scrubSecrets("abc", [{ name: "SHORT", value: "abc" }])).toBe("[redacted SHORT]");
    expect(scrubSecretsDeep({ abc: "abc" }, [{ name: "SHORT", value: "abc" }])).toEqual({
      "[redacted SHORT]": "[redacted SHORT]",
    });
  });
});

describe("scrubSecretsDeep", () => {
  const secrets = secretsOf({ A_TOKEN: "secret-value" });

  it("scrubs strings at any depth, keys included", () => {
    const value = { a: ["x secret-value", { "secret-value": 1, n: 2, z: null }], b: true };
    expect(scrubSecretsDeep(value, secrets)).toEqual({
      a: ["x [redacted A_TOKEN]", { "[redacted A_TOKEN]": 1, n: 2, z: null }],
      b: true,
    });
  });

  it("returns the very same objects when nothing held a secret", () => {
    const clean = { a: ["x", { b: "y", c: 1 }], d: null };
    expect(scrubSecretsDeep(clean, secrets)).toBe(clean);
    const partly = { keep: { b: "y" }, change: ["secret-value"] };
    const scrubbed = scrubSecretsDeep(partly, secrets);
    expect(scrubbed).not.toBe(partly);
    expect(scrubbed.keep).toBe(partly.keep);
    expect(scrubbed.change).toEqual(["[redacted A_TOKEN]"]);
  });

  it("copies what comes before and after the first change, in order", () => {
    const value = { first: 1, second: ["a", "secret-value", "b"], "secret-value": "x", last: { y: 2 } };
    const scrubbed = scrubSecretsDeep(value, secrets);
    expect(Object.entries(scrubbed)).toEqual([
      ["first", 1],
      ["second", ["a", "[redacted A_TOKEN]", "b"]],
      ["[redacted A_TOKEN]", "x"],
      ["last", { y: 2 }],
    ]);
    expect(scrubbed.last).toBe(value.last);
    expect(value.second).toEqual(["a", "secret-value", "b"]);
  });
});
