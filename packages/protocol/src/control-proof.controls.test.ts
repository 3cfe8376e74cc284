// The proofs of #15's controls: a graceful stop, a steering message and a group's budget cap.
import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  abortProof,
  budgetCapProof,
  controlProof,
  groupToken,
  steerProof,
  stopProof,
} from "./control-proof.js";

const KEY = "k".repeat(64);
const hmac = (key: string, ...parts: (string | number)[]) =>
  createHmac("sha256", key).update(parts.join("\n")).digest("hex");

describe("proofs of stops, steering and budgets", () => {
  it("derives each as HMAC-SHA256 over its purpose and fields, one per line", () => {
    expect(stopProof(KEY, "run-1")).toBe(hmac(KEY, "stop", "run-1"));
    expect(groupToken(KEY, "g-1")).toBe(hmac(KEY, "forkd-group-token", "g-1"));
    const text = "Also check the codec.";
    expect(steerProof(KEY, { run_id: "run-1", steer_id: "s-1", text })).toBe(
      hmac(KEY, "steer", "run-1", "s-1", createHash("sha256").update(text).digest("hex")),
    );
    expect(budgetCapProof(KEY, { group_id: "g-1", cap_version: 3, cap: { max_cost_usd: 5 } })).toBe(
      hmac(KEY, "budget", "g-1", 3, "5", ""),
    );
    expect(budgetCapProof(KEY, { group_id: "g-1", cap_version: 3, cap: { max_tokens: 1000 } })).toBe(
      hmac(KEY, "budget", "g-1", 3, "", "1000"),
    );
  });

  it("keeps a stop's proof and an abort's apart, and picks by mode", () => {
    expect(stopProof(KEY, "run-1")).not.toBe(abortProof(KEY, "run-1"));
    expect(controlProof(KEY, "run-1", "stop")).toBe(stopProof(KEY, "run-1"));
    expect(controlProof(KEY, "run-1", "abort")).toBe(abortProof(KEY, "run-1"));
    expect(controlProof(KEY, "run-1", undefined)).toBe(abortProof(KEY, "run-1"));
  });

  it("binds a steering proof to the run, the id and the exact text, and a cap's to its version and bounds", () => {
    const base = { run_id: "run-1", steer_id: "s-1", text: "a" };
    const proof = steerProof(KEY, base);
    expect(steerProof(KEY, { ...base, run_id: "run-2" })).not.toBe(proof);
    expect(steerProof(KEY, { ...base, steer_id: "s-2" })).not.toBe(proof);
    expect(steerProof(KEY, { ...base, text: "b" })).not.toBe(proof);
    const cap = { group_id: "g-1", cap_version: 1, cap: { max_cost_usd: 5 } };
    const capProof = budgetCapProof(KEY, cap);
    expect(budgetCapProof(KEY, { ...cap, cap_version: 2 })).not.toBe(capProof);
    expect(budgetCapProof(KEY, { ...cap, group_id: "g-2" })).not.toBe(capProof);
    expect(budgetCapProof(KEY, { ...cap, cap: { max_cost_usd: 50 } })).not.toBe(capProof);
    expect(budgetCapProof(KEY, { ...cap, cap: { max_cost_usd: 5, max_tokens: 1 } })).not.toBe(capProof);
    expect(groupToken(KEY, "g-1")).not.toBe(groupToken(KEY, "g-2"));
  });
});
