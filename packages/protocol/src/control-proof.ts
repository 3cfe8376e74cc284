// Who may stop a run or answer for it. Inside one NATS account every parent can publish an abort and
// can answer a daemon's request, so the daemon asks for a proof: an HMAC-SHA256 keyed with a secret
// that only the run's owner and the daemons hold. Specs are read by daemons only (the deployed NATS
// permissions give parents no read right on the specs stream), so the spec carries the secret; what
// crosses the account's readable subjects is a proof bound to one run and one request, never the secret.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";

/** A 256-bit secret or proof, as lowercase hex. */
export const HexSecretSchema = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");

/** A new random 256-bit secret: a parent's owner key, or a tool host's reply key. */
export function newSecret(): string {
  return randomBytes(32).toString("hex");
}

function hmac(key: string, ...parts: (string | number)[]): string {
  return createHmac("sha256", key).update(parts.join("\n")).digest("hex");
}

/**
 * The owner token of one run, carried by its spec: derived from the parent's owner key, so that
 * any process holding the key (the parent, `forkd abort` of the same user) can prove ownership of
 * every run it forked without remembering a token per run.
 */
export function ownerToken(ownerKey: string, runId: string): string {
  return hmac(ownerKey, "forkd-owner-token", runId);
}

/**
 * The group token of one group, carried by the specs of its runs: derived from the owner key like
 * {@link ownerToken}, so any process holding the key can sign the group's budget cap.
 */
export function groupToken(ownerKey: string, groupId: string): string {
  return hmac(ownerKey, "forkd-group-token", groupId);
}

/** The proof a group budget's cap carries: bound to the group, the cap's version and its bounds. */
export function budgetCapProof(
  token: string,
  budget: {
    group_id: string;
    cap_version: number;
    cap: { max_cost_usd?: number | undefined; max_tokens?: number | undefined };
  },
): string {
  return hmac(
    token,
    "budget",
    budget.group_id,
    budget.cap_version,
    String(budget.cap.max_cost_usd ?? ""),
    String(budget.cap.max_tokens ?? ""),
  );
}

/** The proof an abort of `runId` carries (on the abort subject and in the registry). */
export function abortProof(token: string, runId: string): string {
  return hmac(token, "abort", runId);
}

/** The proof a graceful stop of `runId` carries: not interchangeable with an abort's. */
export function stopProof(token: string, runId: string): string {
  return hmac(token, "stop", runId);
}

/** The proof of the abort or stop `mode` of `runId`. */
export function controlProof(token: string, runId: string, mode: "abort" | "stop" | undefined): string {
  return mode === "stop" ? stopProof(token, runId) : abortProof(token, runId);
}

/** The proof a steering message carries: bound to its run, its id and its exact text. */
export function steerProof(
  token: string,
  request: { run_id: string; steer_id: string; text: string },
): string {
  const digest = createHash("sha256").update(request.text).digest("hex");
  return hmac(token, "steer", request.run_id, request.steer_id, digest);
}

/** The proof a permission answer carries: bound to the one request it answers. */
export function permissionProof(
  token: string,
  request: { run_id: string; tool_use_id: string; requested_at: number },
): string {
  return hmac(token, "permission", request.run_id, request.tool_use_id, request.requested_at);
}

/** The proof a tool host's reply carries: bound to the one call it answers. */
export function toolHostProof(key: string, request: { run_id: string; tool_use_id: string }): string {
  return hmac(key, "toolhost", request.run_id, request.tool_use_id);
}

/**
 * The proof a daemon's call to a tool host carries: that the run's spec named the host with its reply
 * key, which travels only in the specs of the host's own parent. A host's id is seen on the wire, so
 * without it any parent could fork a run naming another's host and have its tools called. Apart from
 * the reply's proof (`toolHostProof`), which every parent watching the host's subject would otherwise
 * read in the request before the host answers. It covers the input too (as JSON, the last part, so no
 * separator in it can move a boundary): every parent watching the subject sees a call and its proof,
 * and one that covered only the call's ids would run any input sent again under them.
 */
export function toolHostCallProof(
  key: string,
  request: { run_id: string; tool_use_id: string; name: string; input?: unknown },
): string {
  const input = JSON.stringify(request.input ?? null);
  return hmac(key, "toolhost-call", request.run_id, request.tool_use_id, request.name, input);
}

/** Compares a received proof with the expected one in constant time; a missing proof is false. */
export function proofMatches(expected: string, received: string | undefined): boolean {
  if (received === undefined || received.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(expected), Buffer.from(received));
}
