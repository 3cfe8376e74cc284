// The parent turns the benchmarks fork from, and the request the parent itself sent.
import { createForkPrefix } from "@forkd/core";
import type { ForkPrefix } from "@forkd/protocol";
import { type FixtureName, loadFixture } from "@forkd/testing";

/** A recorded parent turn as a fork prefix. */
export interface ParentTurn {
  name: FixtureName;
  prefix: ForkPrefix;
  /** The parent's own last request, as it sent it (it wrote the cache at its breakpoints). */
  request: Record<string, unknown>;
  /** Size of the prefix as JSON. @unit bytes */
  prefixJsonBytes: number;
}

const loaded = new Map<FixtureName, Promise<ParentTurn>>();

/** Loads a fixture once per process (every caller gets the same prefix object). */
export function parentTurn(name: FixtureName): Promise<ParentTurn> {
  let turn = loaded.get(name);
  if (!turn) {
    turn = loadFixture(name).then((fixture) => {
      const prefix = createForkPrefix(fixture.request, fixture.response);
      return {
        name,
        prefix,
        request: fixture.request as Record<string, unknown>,
        prefixJsonBytes: Buffer.byteLength(JSON.stringify(prefix)),
      };
    });
    loaded.set(name, turn);
  }
  return turn;
}

/**
 * A directive no other request of the run contains, so a simulator request can be matched to its fork.
 * The tag leads the first line: `@sim` script lines that follow stay intact.
 */
export function taggedDirective(tag: string, text: string): string {
  return `[bench:${tag}] ${text}`;
}

/**
 * The tag of {@link taggedDirective} in a request body, searched in its last 4096 characters (or
 * bytes), where the directive is. Given the raw bytes, only that tail is decoded: the simulator's
 * process tags every request, and decoding a whole 190 kB body for it cost that process ~0.25 ms a
 * request — CPU taken from the two cores the measured processes share.
 */
export function tagOf(body: string | Buffer): string | undefined {
  const tail =
    typeof body === "string"
      ? body.slice(-4096)
      : body.subarray(Math.max(0, body.length - 4096)).toString("utf8");
  const matches = [...tail.matchAll(/\[bench:([A-Za-z0-9_-]+)\]/g)];
  return matches.at(-1)?.[1];
}

/** The five children's tasks of the cost benchmarks (#1, #13): the same work on every provider. */
export const AUDIT_DIRECTIVES: readonly string[] = [
  "Audit slice 1: the codec's depth limit and what a hostile payload can do to it.",
  "Audit slice 2: the event publisher's fencing under a redelivered spec.",
  "Audit slice 3: how the abort fast path and the registry flag interact when a daemon restarts mid-run.",
  "Audit slice 4: the prefix store's hash check.",
  "Audit slice 5: the delta batcher's flush on abort, and whether a partial batch can be lost between the last llm.delta and the aborted event.",
];
