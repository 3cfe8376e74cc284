// What the page knows: every run (the CLI's tracker, fed the same events) with what the registry adds
// (parent, group, label), every daemon, and the groups the runs fall in. Pure data: no DOM, no NATS.
import {
  costOfTokens,
  type DaemonInfo,
  defaultPricingTable,
  type ForkEvent,
  isFinalStatus,
  promptTokens,
  type RunRow,
  type RunState,
  RunTracker,
} from "./shared.js";

/** What the registry says of a run beyond its events. */
export interface RunMeta {
  parent: string | undefined;
  /** A `group` field of the registry entry, when the installation sets one. */
  group: string | undefined;
  createdAt: number | undefined;
}

/** One line of the run list: a group's header, or a run. */
export type ListLine =
  | { kind: "group"; key: string; title: string; runs: number; running: number; costUsd: number }
  | { kind: "run"; row: RunRow; meta: RunMeta };

/** What the list shows. */
export interface RunFilter {
  /** Words that must all appear in the run's id, label, daemon, parent, group or model. */
  text: string;
  /** `all`, `active` (queued or running), or one display status. */
  status: string;
}

/** A group's cost with forking, beside the same tokens sent without a shared cache. */
export interface GroupCost {
  key: string;
  title: string;
  runs: number;
  forkedUsd: number;
  unforkedUsd: number;
}

const NO_PARENT = "(no parent)";

function groupKeyOf(meta: RunMeta): string {
  return `${meta.parent ?? NO_PARENT}${meta.group === undefined ? "" : ` · ${meta.group}`}`;
}

/**
 * What the same tokens would have cost without forking: every prompt token sent uncached (no cache
 * read, no cache write), the output the same. Undefined for a model the pricing table does not know.
 */
export function unforkedCostOf(row: RunRow): number | undefined {
  const pricing = defaultPricingTable.lookup(row.model ?? "");
  if (pricing === undefined) return undefined;
  return costOfTokens(pricing, {
    input_tokens: promptTokens(row.usage),
    cache_write_5m_tokens: 0,
    cache_write_1h_tokens: 0,
    cache_read_tokens: 0,
    output_tokens: row.usage.output_tokens,
  });
}

/** Runs and daemons, updated by events and registry entries. */
export class PageModel {
  readonly tracker = new RunTracker();
  readonly #meta = new Map<string, RunMeta>();
  /** Run ids in the order first seen: the list keeps that order, so rows never jump. */
  readonly #order: string[] = [];
  readonly daemons = new Map<string, DaemonInfo>();
  /** Bumped on every change, so that views know when to render again. */
  version = 0;

  #metaOf(runId: string): RunMeta {
    let meta = this.#meta.get(runId);
    if (meta === undefined) {
      meta = { parent: undefined, group: undefined, createdAt: undefined };
      this.#meta.set(runId, meta);
      this.#order.push(runId);
    }
    return meta;
  }

  /** Applies one event of any run; false for a replayed or redelivered one. */
  applyEvent(event: ForkEvent): boolean {
    this.#metaOf(event.run_id);
    const applied = this.tracker.apply(event);
    if (applied) this.version += 1;
    return applied;
  }

  /** Applies a registry entry (runs bucket). */
  applyRunState(state: RunState): void {
    const meta = this.#metaOf(state.run_id);
    meta.parent = state.parent_agent_id ?? meta.parent;
    const group = (state as { group?: unknown }).group;
    if (typeof group === "string" && group !== "") meta.group = group;
    meta.createdAt = state.created_at;
    const row = this.tracker.row(state.run_id, state.label);
    if (row.model === undefined && state.model !== undefined) row.model = state.model;
    if (row.daemonId === undefined && state.daemon_id !== undefined) row.daemonId = state.daemon_id;
    this.version += 1;
  }

  /** Applies a daemons-bucket entry; `undefined` removes the daemon. */
  applyDaemon(daemonId: string, info: DaemonInfo | undefined): void {
    if (info === undefined) this.daemons.delete(daemonId);
    else this.daemons.set(daemonId, info);
    this.version += 1;
  }

  /** The run's row and meta, when known. */
  run(runId: string): { row: RunRow; meta: RunMeta } | undefined {
    const meta = this.#meta.get(runId);
    return meta === undefined ? undefined : { row: this.tracker.row(runId), meta };
  }

  /** How many runs there are, by display status. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const runId of this.#order) {
      const status = this.tracker.row(runId).status;
      counts.set(status, (counts.get(status) ?? 0) + 1);
    }
    return counts;
  }

  /** The list: each group's header, then its runs, in the order first seen, filtered. */
  lines(filter: RunFilter): ListLine[] {
    const words = filter.text.toLowerCase().split(/\s+/).filter(Boolean);
    const groups = new Map<string, { runs: ListLine[]; running: number; costUsd: number }>();
    for (const runId of this.#order) {
      const meta = this.#meta.get(runId)!;
      const row = this.tracker.row(runId);
      if (!matchesStatus(row, filter.status)) continue;
      if (words.length > 0) {
        const haystack = [runId, row.label, row.daemonId, meta.parent, meta.group, row.model]
          .filter(Boolean)
          .join(" ")
          .toLowerCase();
        if (!words.every((word) => haystack.includes(word))) continue;
      }
      const key = groupKeyOf(meta);
      let group = groups.get(key);
      if (group === undefined) {
        group = { runs: [], running: 0, costUsd: 0 };
        groups.set(key, group);
      }
      group.runs.push({ kind: "run", row, meta });
      if (!isFinalStatus(row.status)) group.running += 1;
      group.costUsd += row.usage.cost_usd ?? 0;
    }
    const lines: ListLine[] = [];
    for (const [key, group] of groups) {
      lines.push({
        kind: "group",
        key,
        title: key,
        runs: group.runs.length,
        running: group.running,
        costUsd: group.costUsd,
      });
      lines.push(...group.runs);
    }
    return lines;
  }

  /** Each group's cost with forking and without, in the order first seen. */
  groupCosts(): GroupCost[] {
    const groups = new Map<string, GroupCost>();
    for (const runId of this.#order) {
      const meta = this.#meta.get(runId)!;
      const row = this.tracker.row(runId);
      if (row.usage.llm_calls === 0 && row.usage.cost_usd === 0) continue;
      // A model the pricing table does not know has no cost either way: left out of both bars.
      const forked = row.usage.cost_usd;
      const unforked = unforkedCostOf(row);
      if (forked === null || unforked === undefined) continue;
      const key = groupKeyOf(meta);
      let group = groups.get(key);
      if (group === undefined) {
        group = { key, title: key, runs: 0, forkedUsd: 0, unforkedUsd: 0 };
        groups.set(key, group);
      }
      group.runs += 1;
      group.forkedUsd += forked;
      group.unforkedUsd += unforked;
    }
    return [...groups.values()];
  }
}

function matchesStatus(row: RunRow, status: string): boolean {
  if (status === "all") return true;
  if (status === "active") return !isFinalStatus(row.status);
  return row.status === status;
}
