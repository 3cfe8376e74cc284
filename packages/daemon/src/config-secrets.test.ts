import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadDaemonConfig } from "./config.js";
import { secretFilesOf, secretsOfConfig } from "./config-secrets.js";
import { daemonSecrets, registerDaemonSecrets, scrubSecrets } from "./tools/secrets.js";

const dir = mkdtempSync(join(tmpdir(), "forkd-config-secrets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SEED = `SUA${"B".repeat(55)}`;
const JWT = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJzdWIiOiJVQUJDIn0.c2lnbmF0dXJl";

describe("secretsOfConfig", () => {
  it("finds the password of a password file (spaces included), the tokens of a creds file and URL passwords", () => {
    const passFile = join(dir, "pass");
    writeFileSync(passFile, "correct horse battery\nsecond line is not read\n");
    const credsFile = join(dir, "user.creds");
    writeFileSync(
      credsFile,
      `-----BEGIN NATS USER JWT-----\n${JWT}\n------END NATS USER JWT------\n\n` +
        "************************* IMPORTANT *************************\n" +
        "NKEYs are sensitive and should be treated as secrets.\n\n" +
        `-----BEGIN USER NKEY SEED-----\n${SEED}\n------END USER NKEY SEED------\n`,
    );
    const config = loadDaemonConfig({
      env: {},
      argv: [
        ...["--nats", "nats://daemon:url-password-1@127.0.0.1:4222", "--workspace", dir],
        ...["--nats-pass-file", passFile, "--nats-creds", credsFile],
      ],
      overrides: {
        llm: {
          apiKey: "configured-api-key-123",
          openaiApiKey: "configured-openai-key-456",
          geminiApiKey: "configured-gemini-key-789",
        },
      },
    });
    const values = secretsOfConfig(config).map((secret) => secret.value);
    expect(secretsOfConfig(config).find((secret) => secret.value === "configured-openai-key-456")?.name).toBe(
      "llm.openaiApiKey",
    );
    expect(secretsOfConfig(config).find((secret) => secret.value === "configured-gemini-key-789")?.name).toBe(
      "llm.geminiApiKey",
    );
    expect(values).toEqual(
      expect.arrayContaining([
        "correct horse battery",
        JWT,
        SEED,
        "url-password-1",
        "configured-api-key-123",
      ]),
    );
    expect(values).not.toContain("second line is not read");
    expect(values.some((value) => value.includes("IMPORTANT") || value.includes("sensitive"))).toBe(false);
    expect(secretFilesOf(config)).toEqual([passFile, credsFile]);
  });

  it("names each secret after the setting it came from, trims it, and skips empty ones", () => {
    const write = (name: string, text: string) => {
      const file = join(dir, name);
      writeFileSync(file, text);
      return file;
    };
    const passFile = write("named-pass", "  file password  \r\nsecond\r\n");
    const seedFile = write("named-seed", `${SEED}\r\n`);
    const keyFile = write(
      "named-key",
      "-----BEGIN PRIVATE KEY-----\n  MIIEvQIBADANBg  \nkq+hkiG9w0=\n-----END PRIVATE KEY-----\n",
    );
    const config = loadDaemonConfig({
      env: {},
      argv: [
        ...[
          "--nats",
          "NATS://u:p%40ss@127.0.0.1:4222,nats://v:bad%zz@127.0.0.1:4223,nats://w@127.0.0.1:4224",
        ],
        ...["--workspace", dir, "--nats-pass", " flag-password ", "--nats-token", "   "],
        ...["--nats-pass-file", passFile, "--nats-nkey", seedFile, "--nats-tls-key", keyFile],
      ],
      overrides: { llm: { apiKey: "", baseURL: "https://proxy:base-url-secret@example.test/v1" } },
    });
    expect(secretsOfConfig(config)).toEqual([
      { name: "nats.pass", value: "flag-password" },
      { name: "nats.passFile", value: "file password" },
      { name: "nats.nkeySeedFile", value: SEED },
      { name: "nats.tls.keyFile", value: "MIIEvQIBADANBg" },
      { name: "nats.tls.keyFile", value: "kq+hkiG9w0=" },
      { name: "url password", value: "p@ss" },
      // Not a valid percent-encoding: the password as written.
      { name: "url password", value: "bad%zz" },
      { name: "url password", value: "base-url-secret" },
    ]);
    expect(secretFilesOf(config)).toEqual([passFile, seedFile, keyFile]);
  });

  it("names a token and a configured API key", () => {
    const config = loadDaemonConfig({
      env: {},
      argv: ["--nats", "nats://127.0.0.1:4222", "--workspace", dir, "--nats-token", "a-token"],
      // A URL inside the base URL's query is not its password.
      overrides: {
        llm: { apiKey: "an-api-key", baseURL: "https://example.test/v1?next=http://u:not-its-password@x" },
      },
    });
    expect(secretsOfConfig(config)).toEqual([
      { name: "nats.token", value: "a-token" },
      { name: "llm.apiKey", value: "an-api-key" },
    ]);
    expect(secretFilesOf(config)).toEqual([]);
  });

  it("holds nothing for a file it cannot read (connecting reports that)", () => {
    const config = loadDaemonConfig({
      env: {},
      argv: ["--nats", "nats://127.0.0.1:4222", "--workspace", dir, "--nats-pass-file", join(dir, "missing")],
    });
    expect(secretsOfConfig(config)).toEqual([]);
  });
});

describe("daemonSecrets and scrubSecrets", () => {
  it("scrub registered configuration secrets alongside the environment's", () => {
    registerDaemonSecrets([{ name: "nats.passFile", value: "registered-password-42" }]);
    const secrets = daemonSecrets({ NATS_TOKEN: "environment-token-42" });
    expect(scrubSecrets("a registered-password-42 b environment-token-42", secrets)).toBe(
      "a [redacted nats.passFile] b [redacted NATS_TOKEN]",
    );
  });

  it("scrub API keys and NKey seeds by their shape, whoever they belong to", () => {
    expect(scrubSecrets(`key sk-ant-api03-${"x".repeat(40)} seed ${SEED}.`, [])).toBe(
      "key [redacted anthropic key] seed [redacted nkey seed].",
    );
    expect(scrubSecrets("sk-ant-short and SUAB are no secrets", [])).toBe(
      "sk-ant-short and SUAB are no secrets",
    );
  });
});
