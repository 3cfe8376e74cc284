// A prefix that many children share, made immutable so that what is derived from its values (their
// serialised bytes) can be computed once and reused by every child: siblings send the parent's
// prefix byte for byte, so serialising it once per parent instead of once per child is only safe
// when nothing can change it in between. Freezing makes that a guarantee, not a convention.
import type { ForkPrefix } from "@forkd/protocol";

// Every object reached from a sealed prefix. A WeakSet: sealing keeps nothing alive.
const sealedValues = new WeakSet<object>();

function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || sealedValues.has(value)) return;
  sealedValues.add(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  Object.freeze(value);
}

/**
 * Makes `prefix` and everything it holds immutable (deeply frozen: a later write throws in strict
 * code) and marks each of its objects as sealed (see {@link isSealedValue}), so that their
 * serialisation may be cached by identity. Only for a prefix its caller owns (the daemon's decoded
 * copy of a stored prefix), never for an object an application may still change. Returns `prefix`.
 */
export function sealSharedPrefix(prefix: ForkPrefix): ForkPrefix {
  deepFreeze(prefix);
  return prefix;
}

/**
 * True when `value` belongs to a prefix sealed by {@link sealSharedPrefix}: it cannot change, so its
 * serialised form is the same every time and may be reused.
 */
export function isSealedValue(value: unknown): value is object {
  return typeof value === "object" && value !== null && sealedValues.has(value);
}
