// JetStream's refusals are told apart by their API error code, never by the text of a message.
import { JetStreamApiError } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { isAlreadyExists, isStorageFull, isWrongLastSequence } from "./jetstream-errors.js";

const apiError = (errCode: number, description = "refused") =>
  new JetStreamApiError({ code: 400, err_code: errCode, description });

describe("JetStream errors", () => {
  it("a lost compare-and-set is 10071, or 10164 when the subject had no message", () => {
    expect(isWrongLastSequence(apiError(10071, "wrong last sequence: 4"))).toBe(true);
    expect(isWrongLastSequence(apiError(10164))).toBe(true);
    expect(isWrongLastSequence(apiError(10077))).toBe(false);
  });

  it("a full stream is a store failure (10077) or no resources left (10047)", () => {
    expect(isStorageFull(apiError(10077))).toBe(true);
    expect(isStorageFull(apiError(10047))).toBe(true);
    expect(isStorageFull(apiError(10071))).toBe(false);
  });

  it("a resource another process made is 10058, 10013 or 10148", () => {
    for (const code of [10058, 10013, 10148])
      expect(isAlreadyExists(apiError(code)), String(code)).toBe(true);
    expect(isAlreadyExists(apiError(10059, "stream not found"))).toBe(false);
  });

  it("a message that only reads like one is none of them", () => {
    const lookalikes = [
      new Error("wrong last sequence 10071"),
      new Error("stream name already in use 10058"),
      new Error("insufficient resources 10047"),
      { code: 10071 },
      "10071",
    ];
    for (const error of lookalikes) {
      expect(isWrongLastSequence(error)).toBe(false);
      expect(isAlreadyExists(error)).toBe(false);
      expect(isStorageFull(error)).toBe(false);
    }
  });
});
