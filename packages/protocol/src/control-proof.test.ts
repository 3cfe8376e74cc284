// The proofs that let a daemon tell a run's owner (and a tool host) from any other publisher in the
// account: fixed derivations, since a parent and a daemon of different builds must agree on them.
import { describe, expect, it } from "vitest";
import {
  abortProof,
  HexSecretSchema,
  newSecret,
  ownerToken,
  permissionProof,
  proofMatches,
  toolHostCallProof,
  toolHostProof,
} from "./control-proof.js";

const KEY = "k".repeat(64);
const REQUEST = { run_id: "run-1", tool_use_id: "toolu_1", requested_at: 1_700_000_000_000 };

describe("control proofs", () => {
  it("makes random 256-bit secrets as lowercase hex", () => {
    const a = newSecret();
    expect(HexSecretSchema.safeParse(a).success).toBe(true);
    expect(newSecret()).not.toBe(a);
    expect(HexSecretSchema.safeParse("A".repeat(64)).success).toBe(false);
    expect(HexSecretSchema.safeParse("a".repeat(63)).success).toBe(false);
  });

  it("derives each proof as HMAC-SHA256 over its purpose and fields, one per line", () => {
    // Fixed vectors: HMAC-SHA256(KEY, "<purpose>\n<field>\n…"). A change here breaks parents and
    // daemons of different builds, which must then refuse each other's aborts and answers.
    expect(ownerToken(KEY, "run-1")).toBe("60e8f8618cc5f0fead21e47c47a9ddb869f782bac3aa3c2a058d64bdb46ee888");
    expect(abortProof(KEY, "run-1")).toBe("bfc6b1982647825c6e7770e7e4a4df83841895ba987290e43fff3c08550a5f22");
    expect(permissionProof(KEY, REQUEST)).toBe(
      "b2bb7b78ce847654e2ae5e144b1b25c2de2acba5e76a2d3ec9e9319b9bfcc0e0",
    );
    expect(toolHostProof(KEY, REQUEST)).toBe(
      "00d8f908647d56062cdaa243f005dc374521106cc858e785cd665b5cdefe9c6f",
    );
  });

  it("binds a proof to its purpose and to every field: none stands in for another", () => {
    const proofs = [
      ownerToken(KEY, "run-1"),
      abortProof(KEY, "run-1"),
      abortProof(KEY, "run-2"),
      abortProof("j".repeat(64), "run-1"),
      permissionProof(KEY, REQUEST),
      permissionProof(KEY, { ...REQUEST, requested_at: REQUEST.requested_at + 1 }),
      permissionProof(KEY, { ...REQUEST, tool_use_id: "toolu_2" }),
      // The separator keeps fields apart: "run-1" + "toolu_1" is not "run-1t" + "oolu_1".
      permissionProof(KEY, { ...REQUEST, run_id: "run-1t", tool_use_id: "oolu_1" }),
      toolHostProof(KEY, REQUEST),
      toolHostProof(KEY, { ...REQUEST, run_id: "run-2" }),
      // A call's proof is seen by every parent watching the host's subject before the host answers:
      // were it the reply's proof, any of them could answer first and be believed.
      toolHostCallProof(KEY, { ...REQUEST, name: "Notes" }),
      toolHostCallProof(KEY, { ...REQUEST, name: "Other" }),
      toolHostCallProof(KEY, { ...REQUEST, name: "Notes", tool_use_id: "toolu_2" }),
      // Every parent watching the subject sees a call and its proof: the proof must not fit another input.
      toolHostCallProof(KEY, { ...REQUEST, name: "Notes", input: { path: "/etc/passwd" } }),
      toolHostCallProof(KEY, { ...REQUEST, name: "Notes", input: {} }),
    ];
    expect(new Set(proofs).size).toBe(proofs.length);
  });

  it("matches a proof only when it is the expected one, and never a missing one", () => {
    const expected = abortProof(KEY, "run-1");
    expect(proofMatches(expected, expected)).toBe(true);
    expect(proofMatches(expected, undefined)).toBe(false);
    expect(proofMatches(expected, "")).toBe(false);
    expect(proofMatches(expected, expected.slice(1))).toBe(false);
    expect(proofMatches(expected, `${expected}0`)).toBe(false);
    expect(proofMatches(expected, abortProof(KEY, "run-2"))).toBe(false);
  });
});
