import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { ApiKeys } from "./api-keys.js";
import { SimApiError } from "./errors.js";
import { openExchange } from "./exchange.js";

function exchangeWith(headers: Record<string, string>) {
  const req = new IncomingMessage(new Socket());
  req.method = "POST";
  req.headers = headers;
  return openExchange(req, new ServerResponse(req), {
    seq: 1,
    id: "req_1",
    path: "/v1/messages",
    receivedAt: 0,
  });
}

describe("ApiKeys", () => {
  it("takes x-api-key, else a bearer token, and logs the key's id, never the key", () => {
    const keys = new ApiKeys();
    const ex = exchangeWith({ "x-api-key": "sk-one" });
    expect(keys.authenticate(ex)).toBe("sk-one");
    expect(ex.entry.keyId).toMatch(/^key_[0-9a-f]{12}$/);
    expect(ex.entry.keyId).toBe(keys.idOf("sk-one"));
    const bearer = exchangeWith({ authorization: "Bearer sk-two" });
    expect(keys.authenticate(bearer)).toBe("sk-two");
    expect(bearer.entry.keyId).not.toBe(ex.entry.keyId);
  });

  it("refuses a request without a key, and a key not allowed", () => {
    const keys = new ApiKeys(["sk-allowed"]);
    expect(keys.authenticate(exchangeWith({ "x-api-key": "sk-allowed" }))).toBe("sk-allowed");
    for (const [headers, message] of [
      [{}, "x-api-key header is required"],
      [{ "x-api-key": "sk-other" }, "invalid x-api-key"],
    ] as const) {
      const ex = exchangeWith(headers);
      expect(() => keys.authenticate(ex)).toThrow(new SimApiError("authentication_error", message));
      expect(ex.entry.keyId).toBeNull();
    }
  });
});
