import type { DaemonPresence } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { PeerPresence, type SilentPeer } from "./peer-presence.js";

const beat = (id: string, runs: DaemonPresence["runs"] = []): DaemonPresence => ({
  v: 1,
  daemon_id: id,
  at: 0,
  runs,
});
const RUN = { run_id: "r1", spec_seq: 7, attempt: 1, ack: "$JS.ACK.S.C.1.7.3.1.0" };

function tracker() {
  return new PeerPresence({ selfId: "me", intervalMs: 100, silentAfterMs: 1000 });
}

describe("PeerPresence", () => {
  it("judges a peer gone after exactly silentAfterMs of silence, with the runs it last held, once", () => {
    const peers = tracker();
    peers.observe(beat("a", [RUN]), 0);
    for (let now = 100; now <= 900; now += 100) expect(peers.sweep(now)).toEqual([]);
    expect(peers.sweep(999)).toEqual([]);
    expect(peers.sweep(1000)).toEqual([{ ...beat("a", [RUN]), lastSeenAt: 0 }]);
    expect(peers.sweep(1100)).toEqual([]);
    expect(peers.size).toBe(0);
  });

  it("says which runs a live peer holds, as its last beat says, and forgets them with the peer", () => {
    const peers = tracker();
    peers.observe(beat("a", [RUN]), 0);
    peers.observe(beat("b"), 0);
    peers.observe(beat("me", [{ ...RUN, run_id: "mine" }]), 0);
    expect(peers.holds("r1")).toBe(true);
    expect(peers.holds("r2")).toBe(false);
    expect(peers.holds("mine")).toBe(false); // this daemon's own runs are its #active map's
    peers.observe(beat("a"), 50); // it ended
    expect(peers.holds("r1")).toBe(false);
    peers.observe(beat("a", [RUN]), 60);
    peers.sweep(1100);
    expect(peers.holds("r1")).toBe(false);
  });

  it("keeps a peer that beats, and ignores this daemon's own beats", () => {
    const peers = tracker();
    for (let now = 0; now <= 3000; now += 100) {
      peers.observe(beat("a"), now);
      peers.observe(beat("me", [RUN]), now);
      expect(peers.sweep(now)).toEqual([]);
    }
    expect(peers.size).toBe(1);
  });

  it("judges nobody after its own stall: a late sweep gives every peer a fresh start", () => {
    const peers = tracker();
    peers.observe(beat("a", [RUN]), 0);
    expect(peers.sweep(100)).toEqual([]);
    // More than two intervals late (this daemon's own loop was stalled): nobody is judged, and the
    // silence is counted again from here.
    expect(peers.sweep(1301)).toEqual([]);
    expect(firstJudged(peers, 1401)).toEqual({ at: 2301, gone: [{ ...beat("a", [RUN]), lastSeenAt: 1301 }] });
  });

  it("a sweep exactly two intervals late still judges", () => {
    const peers = tracker();
    peers.observe(beat("a"), 0);
    expect(peers.sweep(900)).toEqual([]);
    expect(peers.sweep(1100)).toEqual([{ ...beat("a"), lastSeenAt: 0 }]);
  });

  it("refreshAll and forget spare a peer", () => {
    const peers = tracker();
    peers.observe(beat("a"), 0);
    peers.observe(beat("b"), 0);
    expect(peers.sweep(800)).toEqual([]);
    peers.refreshAll(900);
    peers.forget("b");
    expect(firstJudged(peers, 900)).toEqual({ at: 1900, gone: [{ ...beat("a"), lastSeenAt: 900 }] });
  });
});

/** Sweeps every interval from `from` until someone is judged gone. */
function firstJudged(peers: PeerPresence, from: number): { at: number; gone: SilentPeer[] } | undefined {
  for (let now = from; now <= from + 10_000; now += 100) {
    const gone = peers.sweep(now);
    if (gone.length > 0) return { at: now, gone };
  }
  return undefined;
}
