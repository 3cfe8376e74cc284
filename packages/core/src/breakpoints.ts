// Prompt-cache breakpoints (`cache_control` markers) of a request: where they are, and how one is
// placed within the provider's limit of four and its TTL order (1h entries before 5m entries).
import type { CacheControl, CacheSafeParams } from "@forkd/protocol";

/** Most breakpoints a request may carry. */
export const MAX_CACHE_BREAKPOINTS = 4;

/** Where a block sits in a request: a tool definition, a system block, or a message's content block. */
export type BlockLocation =
  | { area: "tools"; index: number }
  | { area: "system"; index: number }
  | { area: "messages"; messageIndex: number; blockIndex: number };

/** A content block of a message. */
export type MessageBlockLocation = Extract<BlockLocation, { area: "messages" }>;

/** A breakpoint found in a request. */
export interface Breakpoint {
  location: BlockLocation;
  /** The marker's TTL; a marker without one is 5m. */
  ttl: "5m" | "1h";
}

/** Options of {@link placeBreakpoint}. */
export interface PlaceBreakpointOptions {
  /**
   * TTL of the new marker. Only a 5m marker can follow 5m markers. @default "5m", or "1h" when a 1h
   * top-level `cache_control` puts its breakpoint after it
   */
  ttl?: "5m" | "1h" | undefined;
  /** Markers never dropped to make room (e.g. the fork's own breakpoint). */
  protect?: readonly BlockLocation[];
}

type MutableRequest = Pick<CacheSafeParams, "tools" | "system" | "messages">;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function markerTtl(marker: unknown): "5m" | "1h" | null {
  if (!isRecord(marker)) return null;
  return marker.ttl === "1h" ? "1h" : "5m";
}

/** All breakpoints of `request`, in prefix order: tools, then system, then messages. */
export function listBreakpoints(request: MutableRequest): Breakpoint[] {
  const found: Breakpoint[] = [];
  (request.tools ?? []).forEach((tool, index) => {
    const ttl = markerTtl((tool as Record<string, unknown>).cache_control);
    if (ttl) found.push({ location: { area: "tools", index }, ttl });
  });
  if (Array.isArray(request.system)) {
    request.system.forEach((block, index) => {
      const ttl = markerTtl((block as Record<string, unknown>).cache_control);
      if (ttl) found.push({ location: { area: "system", index }, ttl });
    });
  }
  request.messages.forEach((message, messageIndex) => {
    if (!Array.isArray(message.content)) return;
    message.content.forEach((block, blockIndex) => {
      const ttl = markerTtl((block as Record<string, unknown>).cache_control);
      if (ttl) found.push({ location: { area: "messages", messageIndex, blockIndex }, ttl });
    });
  });
  return found;
}

/**
 * Whether the provider accepts a `cache_control` marker on `block`: not on thinking blocks, and not
 * on empty text blocks.
 */
export function canCarryBreakpoint(block: unknown): boolean {
  if (!isRecord(block) || typeof block.type !== "string") return false;
  if (block.type === "thinking" || block.type === "redacted_thinking") return false;
  if (block.type === "text" && (typeof block.text !== "string" || block.text === "")) return false;
  return true;
}

/**
 * Index of the last block of `content` (before index `end`) that can carry a breakpoint, or -1.
 * @param end exclusive upper bound. @default content.length
 */
export function lastBreakpointCandidate(content: readonly unknown[], end: number = content.length): number {
  for (let i = Math.min(end, content.length) - 1; i >= 0; i--) {
    if (canCarryBreakpoint(content[i])) return i;
  }
  return -1;
}

/**
 * Where a top-level `cache_control` (automatic caching) puts its breakpoint: on the last block of the
 * request that is not a thinking block (a string message content is one block), with the marker's
 * TTL. It takes one of the four slots unless that block carries its own marker. `null` without one.
 */
export function automaticBreakpoint(request: MutableRequest): Breakpoint | null {
  const ttl = markerTtl((request as { cache_control?: unknown }).cache_control);
  if (ttl === null) return null;
  for (let messageIndex = request.messages.length - 1; messageIndex >= 0; messageIndex--) {
    const content = request.messages[messageIndex]!.content;
    if (typeof content === "string") {
      if (content !== "") return { location: { area: "messages", messageIndex, blockIndex: 0 }, ttl };
      continue;
    }
    for (let blockIndex = content.length - 1; blockIndex >= 0; blockIndex--) {
      const type = (content[blockIndex] as { type?: unknown }).type;
      if (type !== "thinking" && type !== "redacted_thinking") {
        return { location: { area: "messages", messageIndex, blockIndex }, ttl };
      }
    }
  }
  const system = request.system;
  if (Array.isArray(system) && system.length > 0) {
    return { location: { area: "system", index: system.length - 1 }, ttl };
  }
  const tools = request.tools ?? [];
  return tools.length > 0 ? { location: { area: "tools", index: tools.length - 1 }, ttl } : null;
}

/**
 * Every breakpoint the provider counts in `request`: its markers ({@link listBreakpoints}), then the
 * automatic one when it is not on a marked block.
 */
export function countedBreakpoints(request: MutableRequest): Breakpoint[] {
  const markers = listBreakpoints(request);
  const automatic = automaticBreakpoint(request);
  if (automatic === null || markers.some((b) => sameLocation(b.location, automatic.location))) return markers;
  return [...markers, automatic];
}

function sameLocation(a: BlockLocation, b: BlockLocation): boolean {
  if (a.area !== b.area) return false;
  if (a.area === "messages" && b.area === "messages") {
    return a.messageIndex === b.messageIndex && a.blockIndex === b.blockIndex;
  }
  return (a as { index: number }).index === (b as { index: number }).index;
}

// Copy-on-write: replaces the containers on the path to the block, so objects the request shares with
// someone else (the parent's prefix, the turn loop's history) are never written into.
function writableBlock(request: MutableRequest, location: BlockLocation): Record<string, unknown> {
  if (location.area === "tools") {
    const tools = [...(request.tools ?? [])];
    const copy = { ...tools[location.index] } as Record<string, unknown>;
    tools[location.index] = copy as (typeof tools)[number];
    request.tools = tools;
    return copy;
  }
  if (location.area === "system") {
    const system = [...(request.system as Record<string, unknown>[])];
    const copy = { ...system[location.index] };
    system[location.index] = copy;
    request.system = system as typeof request.system;
    return copy;
  }
  const messages = [...request.messages];
  const message = messages[location.messageIndex]!;
  const content = [...(message.content as unknown[])];
  const copy = { ...(content[location.blockIndex] as Record<string, unknown>) };
  content[location.blockIndex] = copy;
  messages[location.messageIndex] = { ...message, content: content as typeof message.content };
  request.messages = messages;
  return copy;
}

/**
 * Puts a breakpoint on the message block `at` of `request`, then drops other markers until the
 * request is valid again:
 * 1. a marker already at `at` is kept as it is (with its own TTL);
 * 2. any 5m marker followed by a 1h marker is dropped (the provider wants 1h entries first; a
 *    marker's TTL is never changed, since that would change what it costs);
 * 3. while there are more than {@link MAX_CACHE_BREAKPOINTS}, the earliest marker is dropped: later
 *    markers cover longer prefixes, so the earliest are the cheapest to lose.
 * `at` and `options.protect` are never dropped. A top-level `cache_control` counts as the breakpoint
 * the provider adds on the last block ({@link automaticBreakpoint}), after every marker: a child's
 * directive follows the fork's marker, so a parent that caches automatically with three markers of its
 * own would otherwise send its children five.
 *
 * `request` is changed in place, but only its own top-level fields are assigned: arrays and objects
 * on the way to a changed block are copied, never written into.
 *
 * @returns the breakpoints the request carries afterwards, in prefix order.
 */
export function placeBreakpoint(
  request: MutableRequest,
  at: MessageBlockLocation,
  options: PlaceBreakpointOptions = {},
): Breakpoint[] {
  const target = request.messages[at.messageIndex]?.content;
  if (!Array.isArray(target) || !canCarryBreakpoint(target[at.blockIndex])) {
    throw new RangeError(
      `no block at messages[${at.messageIndex}].content[${at.blockIndex}] can carry a breakpoint`,
    );
  }
  // A 1h automatic breakpoint after the new marker would make a 5m one invalid: it takes 1h too.
  const automatic = automaticBreakpoint(request);
  const after1h = automatic?.ttl === "1h" && !sameLocation(automatic.location, at);
  if (markerTtl((target[at.blockIndex] as Record<string, unknown>).cache_control) === null) {
    const marker: CacheControl =
      options.ttl === "1h" || after1h ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" };
    writableBlock(request, at).cache_control = marker;
  }
  const pinned = [at, ...(options.protect ?? [])];
  const isPinned = (location: BlockLocation) => pinned.some((p) => sameLocation(p, location));
  let kept = listBreakpoints(request);
  const drop = (victim: Breakpoint) => {
    delete writableBlock(request, victim.location).cache_control;
    kept = kept.filter((b) => b !== victim);
  };
  // The automatic breakpoint, when it is not on a marked block: the last of all, and one more slot.
  const extra = () =>
    automatic !== null && !kept.some((b) => sameLocation(b.location, automatic.location)) ? 1 : 0;
  for (const breakpoint of [...kept]) {
    const index = kept.indexOf(breakpoint);
    const followedBy1h =
      kept.slice(index + 1).some((later) => later.ttl === "1h") || (extra() === 1 && automatic?.ttl === "1h");
    if (breakpoint.ttl === "5m" && followedBy1h && !isPinned(breakpoint.location)) drop(breakpoint);
  }
  while (kept.length + extra() > MAX_CACHE_BREAKPOINTS) {
    const victim = kept.find((b) => !isPinned(b.location));
    if (victim === undefined) break;
    drop(victim);
  }
  return kept;
}
