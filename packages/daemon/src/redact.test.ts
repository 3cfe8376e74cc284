import { describe, expect, it } from "vitest";
import { redactCredentials } from "./redact.js";

describe("redactCredentials", () => {
  it("hides a URL's password, keeping its user, and a lone token", () => {
    expect(redactCredentials("cannot connect to nats://daemon:s3cret@10.0.0.1:4222, retrying")).toBe(
      "cannot connect to nats://daemon:***@10.0.0.1:4222, retrying",
    );
    expect(redactCredentials("nats://t0ken@host and HTTPS://u:p@h")).toBe(
      "nats://***@host and HTTPS://u:***@h",
    );
    expect(redactCredentials("tls+nats://u:@host")).toBe("tls+nats://u:***@host");
  });

  it("leaves URLs without credentials and mail addresses alone", () => {
    const text = "nats://127.0.0.1:4222/path user@example.com https://example.com/a@b";
    expect(redactCredentials(text)).toBe(text);
  });
});
