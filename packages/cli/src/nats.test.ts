import { describe, expect, it } from "vitest";
import { UsageError } from "./errors.js";
import { DEFAULT_NATS_URL, isNatsConnectionError, natsTarget } from "./nats.js";

describe("natsTarget", () => {
  it("defaults to a local server and the agent prefix", () => {
    expect(natsTarget({}, {})).toEqual({
      servers: [DEFAULT_NATS_URL],
      prefix: "agent",
      nats: { servers: [DEFAULT_NATS_URL] },
    });
  });

  it("takes FORKD_NATS_URL before NATS_URL, and flags before both", () => {
    const env = { FORKD_NATS_URL: "nats://a:4222,nats://b:4222", NATS_URL: "nats://c:4222" };
    expect(natsTarget({}, env).servers).toEqual(["nats://a:4222", "nats://b:4222"]);
    expect(natsTarget({}, { NATS_URL: "nats://c:4222" }).servers).toEqual(["nats://c:4222"]);
    expect(natsTarget({ nats: ["nats://d:4222,nats://e:4222", "nats://f:4222"] }, env).servers).toEqual([
      "nats://d:4222",
      "nats://e:4222",
      "nats://f:4222",
    ]);
  });

  it("reads the credentials, TLS files and prefix as the daemon does", () => {
    const target = natsTarget(
      { "nats-pass": "from-flag", "nats-tls-ca": "/ca.pem", prefix: "tenant-a" },
      { NATS_USER: "observer", NATS_PASSWORD: "from-env", NATS_CREDS: "/x.creds", FORKD_PREFIX: "ignored" },
    );
    expect(target.nats).toMatchObject({
      user: "observer",
      pass: "from-flag",
      credsFile: "/x.creds",
      tls: { caFile: "/ca.pem" },
    });
    expect(target.prefix).toBe("tenant-a");
    expect(natsTarget({}, { FORKD_PREFIX: "tenant-b" }).prefix).toBe("tenant-b");
  });

  it("refuses a prefix that is not a subject prefix", () => {
    expect(() => natsTarget({ prefix: "a b" }, {})).toThrow(UsageError);
  });
});

describe("isNatsConnectionError", () => {
  it("knows what the client throws when no server answers", () => {
    expect(
      isNatsConnectionError(Object.assign(new Error("connection refused"), { name: "ConnectionError" })),
    ).toBe(true);
    expect(isNatsConnectionError(new Error("getaddrinfo ENOTFOUND nats"))).toBe(true);
    expect(isNatsConnectionError(new Error("invalid daemon configuration"))).toBe(false);
  });
});
