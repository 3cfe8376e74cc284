// Which peers have gone silent. Each daemon beats its presence several times a second (the runs it
// holds and their ack subjects); a peer not heard from for `silentAfterMs` is judged gone and its
// runs are handed back to the queue (failover.ts). The judgement is only as good as this daemon's
// own hearing: after its own event loop stalled, or its connection came back, it has heard nothing
// for reasons of its own, so it gives every peer a fresh start instead of judging them.
import type { DaemonPresence } from "@forkd/protocol";

/** A peer and what it said last. */
interface Peer {
  lastSeenAt: number;
  presence: DaemonPresence;
}

/** A peer judged gone: its last beat, and when it was heard. */
export type SilentPeer = DaemonPresence & {
  /** When its last beat arrived here. @unit ms since epoch (this daemon's clock) */
  lastSeenAt: number;
};

/** Options of {@link PeerPresence}. */
export interface PeerPresenceOptions {
  /** This daemon: its own beats are not a peer's. */
  selfId: string;
  /** How often {@link PeerPresence.sweep} is called. @unit ms */
  intervalMs: number;
  /** A peer silent this long is gone. @unit ms */
  silentAfterMs: number;
}

/** The peers heard from, and the ones that went silent. */
export class PeerPresence {
  readonly #peers = new Map<string, Peer>();
  readonly #options: PeerPresenceOptions;
  #lastSweepAt: number | undefined;

  constructor(options: PeerPresenceOptions) {
    this.#options = options;
  }

  /** Peers heard from and not judged gone. */
  get size(): number {
    return this.#peers.size;
  }

  /** Whether a live peer said, in its last beat, that it holds run `runId`. */
  holds(runId: string): boolean {
    for (const peer of this.#peers.values())
      if (peer.presence.runs.some((run) => run.run_id === runId)) return true;
    return false;
  }

  /** Records a beat. A beat with no runs from a stopping peer forgets it: it has nothing to hand back. */
  observe(presence: DaemonPresence, now: number): void {
    if (presence.daemon_id === this.#options.selfId) return;
    this.#peers.set(presence.daemon_id, { lastSeenAt: now, presence });
  }

  /** Forgets a peer (it said goodbye). */
  forget(daemonId: string): void {
    this.#peers.delete(daemonId);
  }

  /** Gives every peer a fresh start: this daemon could not hear them (a stall, a reconnect). */
  refreshAll(now: number): void {
    for (const peer of this.#peers.values()) peer.lastSeenAt = now;
  }

  /**
   * The peers silent for `silentAfterMs` or more, with the runs they last said they held; they are
   * forgotten (a peer that comes back is heard anew). Nothing is judged when this sweep comes late
   * (this daemon's own loop stalled for more than two intervals): every peer gets a fresh start.
   */
  sweep(now: number): SilentPeer[] {
    const last = this.#lastSweepAt;
    this.#lastSweepAt = now;
    if (last !== undefined && now - last > 2 * this.#options.intervalMs) {
      this.refreshAll(now);
      return [];
    }
    const gone: SilentPeer[] = [];
    for (const [id, peer] of this.#peers) {
      if (now - peer.lastSeenAt < this.#options.silentAfterMs) continue;
      this.#peers.delete(id);
      gone.push({ ...peer.presence, lastSeenAt: peer.lastSeenAt });
    }
    return gone;
  }
}
