// `forkd ps`: the registry (JetStream KV) as two tables, daemons and runs, or as JSON. By default it
// reads what the registry index answers without a scan (every queued and running run, the newest
// written, one parent's); `--all` reads every stored run.
import {
  bucketKeys,
  type ForkResources,
  getRunState,
  liveRuns,
  newestRuns,
  readRetentionLease,
  runsOfParent,
} from "@forkd/client";
import { totalTokensOf } from "@forkd/core";
import {
  type CallSlots,
  callSlotsCodec,
  type DaemonInfo,
  daemonInfoCodec,
  type GroupBudget,
  type GroupSpend,
  groupBudgetCodec,
  groupBudgetKey,
  groupSpendCodec,
  groupSpendKey,
  type RetentionLease,
  type RunState,
  RunStatusSchema,
} from "@forkd/protocol";
import { describeBudget } from "../budget-text.js";
import type { CommandContext } from "../context.js";
import { UsageError } from "../errors.js";
import { formatAge, formatCompact, formatUsd, renderTable } from "../format.js";
import { styleFor, writeLine } from "../io.js";
import { connectTarget, NATS_FLAGS, natsTarget, openResources } from "../nats.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine, parseInteger } from "../options.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  ...NATS_FLAGS,
  status: { type: "string" },
  limit: { type: "string" },
  parent: { type: "string" },
  all: { type: "boolean" },
  json: { type: "boolean" },
} as const;

const DEFAULT_LIMIT = 50;

/** Every daemon entry of the registry; malformed entries are skipped. */
export async function listDaemons(resources: ForkResources): Promise<DaemonInfo[]> {
  const daemons: DaemonInfo[] = [];
  // Keys of one token: the daemons, not the leases or the call limits.
  for (const key of await bucketKeys(resources, "daemons", "*")) {
    const entry = await resources.daemons.get(key);
    if (entry?.operation !== "PUT" || entry.length === 0) continue;
    try {
      daemons.push(daemonInfoCodec.decode(entry.value));
    } catch {
      // a newer or broken entry: not ours to show
    }
  }
  return daemons.sort((a, b) => a.daemon_id.localeCompare(b.daemon_id));
}

/** A group of the runs shown: how many are in each status, and its budget when it has one. */
export interface GroupView {
  group_id: string;
  statuses: Partial<Record<RunState["status"], number>>;
  budget: GroupBudget | null;
  /** What the group spent and has reserved, as its daemons wrote it. */
  spend: GroupSpend | null;
}

/** The groups of `runs`, with their budgets (one read per group). */
export async function describeGroups(
  resources: ForkResources,
  runs: readonly RunState[],
): Promise<GroupView[]> {
  const groups = new Map<string, GroupView>();
  for (const run of runs) {
    if (run.group_id === undefined) continue;
    const view = groups.get(run.group_id) ?? {
      group_id: run.group_id,
      statuses: {},
      budget: null,
      spend: null,
    };
    view.statuses[run.status] = (view.statuses[run.status] ?? 0) + 1;
    groups.set(run.group_id, view);
  }
  await Promise.all(
    [...groups.values()].map(async (view) => {
      [view.budget, view.spend] = await Promise.all([
        readEntry(resources, groupBudgetKey(view.group_id), groupBudgetCodec),
        readEntry(resources, groupSpendKey(view.group_id), groupSpendCodec),
      ]);
    }),
  );
  return [...groups.values()];
}

/** A runs-bucket entry decoded, or null when it is missing or not ours to show. */
async function readEntry<T>(
  resources: ForkResources,
  key: string,
  codec: { decode(bytes: Uint8Array): T },
): Promise<T | null> {
  const entry = await resources.runs.get(key).catch(() => null);
  if (entry?.operation !== "PUT" || entry.length === 0) return null;
  try {
    return codec.decode(entry.value);
  } catch {
    return null; // a newer or broken entry
  }
}

/** The cluster-wide call limits (`limit.>` in the daemons bucket): who holds slots, who waits. */
export async function listCallLimits(resources: ForkResources): Promise<(CallSlots & { scope: string })[]> {
  const limits: (CallSlots & { scope: string })[] = [];
  for (const key of await bucketKeys(resources, "daemons", "limit.>")) {
    const entry = await resources.daemons.get(key);
    if (entry?.operation !== "PUT" || entry.length === 0) continue;
    try {
      const slots = callSlotsCodec.decode(entry.value);
      limits.push({ ...slots, scope: slots.scope ?? key.slice("limit.".length) });
    } catch {
      // not ours to show
    }
  }
  return limits;
}

/**
 * The runs waiting for a slot of a call limit, and the scopes each waits in (a run waits in one at a
 * time: it takes its scopes in order). Leases already past are left out: their daemons are gone.
 */
export function runsWaitingForSlots(
  limits: readonly (CallSlots & { scope: string })[],
  now: number,
): Map<string, string[]> {
  const waiting = new Map<string, string[]>();
  for (const slots of limits)
    for (const waiter of slots.waiters)
      if (waiter.run_id !== undefined && waiter.until > now)
        waiting.set(waiter.run_id, [...(waiting.get(waiter.run_id) ?? []), slots.scope]);
  return waiting;
}

/** Every run entry of the registry, newest first; malformed entries are skipped. Reads them all. */
export async function listRuns(resources: ForkResources): Promise<RunState[]> {
  // Keys of one token: the runs, not the group, parent, budget or spend keys.
  const keys = await bucketKeys(resources, "runs", "*");
  const states = await Promise.all(
    keys.map((key) =>
      getRunState(resources, key).then(
        (entry) => entry?.state,
        () => undefined,
      ),
    ),
  );
  return states
    .filter((state): state is RunState => state !== undefined)
    .sort((a, b) => b.created_at - a.created_at);
}

function parseStatuses(text: string): Set<RunState["status"]> {
  const statuses = new Set<RunState["status"]>();
  for (const item of text.split(",").map((s) => s.trim())) {
    const parsed = RunStatusSchema.safeParse(item);
    if (!parsed.success) {
      throw new UsageError(
        `--status: unknown status ${JSON.stringify(item)} (use ${RunStatusSchema.options.join(", ")})`,
      );
    }
    statuses.add(parsed.data);
  }
  return statuses;
}

/** Which runs to read; see {@link selectRuns}. */
export interface RunSelection {
  /** Every stored run (a full read of the registry). */
  all: boolean;
  /** Only this parent agent's runs. */
  parent: string | undefined;
  /** Only these statuses; a selection of live statuses reads no finished run. */
  statuses: ReadonlySet<RunState["status"]> | undefined;
  /** How many of the most recently written runs join the live ones. */
  newest: number;
}

/**
 * The runs `forkd ps` shows, newest first: by default every queued and running run and the `newest`
 * most recently written, read through the registry index in time independent of how many finished
 * runs are stored; `parent` lists one parent's; `all` reads every stored run.
 */
export async function selectRuns(resources: ForkResources, selection: RunSelection): Promise<RunState[]> {
  if (selection.all) return listRuns(resources);
  if (selection.parent !== undefined) return runsOfParent(resources, selection.parent);
  const onlyLive =
    selection.statuses !== undefined &&
    [...selection.statuses].every((s) => s === "queued" || s === "running" || s === "paused");
  const [live, newest] = await Promise.all([
    liveRuns(resources),
    onlyLive ? Promise.resolve([]) : newestRuns(resources, selection.newest),
  ]);
  const byId = new Map<string, RunState>();
  for (const run of [...newest, ...live]) byId.set(run.run_id, run);
  return [...byId.values()].sort((a, b) => b.created_at - a.created_at);
}

function describeSelection(
  values: { all?: boolean | undefined; parent?: string | undefined },
  shown: number,
  matching: number,
): string {
  const more = shown < matching ? `, newest ${shown} of ${matching}` : "";
  if (values.all === true) return ` — every stored run${more}`;
  if (values.parent !== undefined) return ` — of parent ${values.parent}${more}`;
  return ` — queued, running and the newest written${more} (--all: every stored run)`;
}

/** One line on what the retention sweep keeps and when it last ran. */
export function describeRetention(lease: RetentionLease | null, now: number): string {
  if (lease === null)
    return "no daemon sweeps: finished runs are kept until a daemon takes the retention lease";
  const last =
    lease.last_sweep === undefined
      ? "no sweep yet"
      : `last sweep ${formatAge(now - lease.last_sweep.at)} ago removed ${lease.last_sweep.runs_removed} runs, ${lease.last_sweep.prefixes_removed} prefixes`;
  return `finished runs kept ${formatAge(lease.retention_ms)}, unused prefixes ${formatAge(lease.prefix_retention_ms)}; swept by ${lease.holder} (${last})`;
}

/** Prints the registry. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("ps", args, OPTIONS);
  expectPositionals("ps", positionals, { min: 0, max: 0, names: "" });
  const statuses = values.status === undefined ? undefined : parseStatuses(values.status);
  const limit = values.limit === undefined ? undefined : parseInteger("limit", values.limit, { min: 1 });
  const target = natsTarget(values, context.io.env);
  const nc = await connectTarget(target, { name: "forkd-ps" });
  try {
    const resources = await openResources(nc, target.prefix);
    const [daemons, selected, retention] = await Promise.all([
      listDaemons(resources),
      selectRuns(resources, {
        all: values.all === true,
        parent: values.parent,
        statuses,
        newest: limit ?? DEFAULT_LIMIT,
      }),
      readRetentionLease(resources).catch(() => null),
    ]);
    const matching = statuses === undefined ? selected : selected.filter((run) => statuses.has(run.status));
    const out = context.io.stdout;
    const [groups, limits] = await Promise.all([
      describeGroups(resources, matching),
      listCallLimits(resources).catch(() => []),
    ]);
    if (values.json) {
      const runs = limit === undefined ? matching : matching.slice(0, limit);
      writeLine(out, JSON.stringify({ daemons, runs, retention, groups, limits }, null, 2));
      return 0;
    }
    const now = Date.now();
    const runs = matching.slice(0, limit ?? DEFAULT_LIMIT);
    const waitingForSlots = runsWaitingForSlots(limits, now);
    const style = styleFor(out, context.io.env);
    writeLine(out, style.bold(`DAEMONS (${daemons.length})`));
    if (daemons.length === 0) writeLine(out, "  none registered");
    else {
      const rows = [
        ["ID", "HOST", "LOAD", "STATE", "VERSION", "HEARTBEAT"],
        ...daemons.map((daemon) => [
          daemon.daemon_id,
          daemon.host,
          `${daemon.load}/${daemon.capacity}`,
          daemon.state,
          daemon.version,
          `${formatAge(now - daemon.heartbeat_at)} ago`,
        ]),
      ];
      for (const line of renderTable(rows, ["left", "left", "right"])) writeLine(out, `  ${line}`);
    }
    writeLine(out);
    writeLine(out, `${style.bold("RETENTION")} ${describeRetention(retention, now)}`);
    writeLine(out);
    writeLine(
      out,
      style.bold(`RUNS (${runs.length})${describeSelection(values, runs.length, matching.length)}`),
    );
    if (runs.length === 0) writeLine(out, "  none");
    else {
      const rows = [
        ["RUN ID", "STATUS", "ATTEMPT", "DAEMON", "LABEL", "AGE", "TOKENS", "COST"],
        ...runs.map((run) => {
          const usage = run.usage;
          const tokens = usage === undefined ? "-" : formatCompact(totalTokensOf(usage));
          const waitsIn = run.status === "running" ? waitingForSlots.get(run.run_id) : undefined;
          return [
            run.run_id,
            waitsIn === undefined ? run.status : `running, waits for a call slot (${waitsIn.join(", ")})`,
            String(run.attempt),
            run.daemon_id ?? "-",
            run.label ?? "-",
            formatAge(now - run.created_at),
            tokens,
            usage === undefined ? "-" : formatUsd(usage.cost_usd),
          ];
        }),
      ];
      for (const line of renderTable(rows, [
        "left",
        "left",
        "right",
        "left",
        "left",
        "right",
        "right",
        "right",
      ]))
        writeLine(out, `  ${line}`);
    }
    if (groups.length > 0) {
      writeLine(out);
      writeLine(out, style.bold(`GROUPS (${groups.length})`));
      const rows = [
        ["GROUP ID", "RUNS", "BUDGET"],
        ...groups.map((group) => [
          group.group_id,
          Object.entries(group.statuses)
            .map(([status, count]) => `${count} ${status}`)
            .join(", "),
          describeBudget(group.budget, group.spend),
        ]),
      ];
      for (const line of renderTable(rows, ["left", "left", "left"])) writeLine(out, `  ${line}`);
    }
    if (limits.length > 0) {
      writeLine(out);
      writeLine(out, style.bold(`CALL LIMITS (${limits.length})`));
      const rows = [
        ["SCOPE", "HELD", "WAITING"],
        ...limits.map((slots) => [
          slots.scope,
          `${slots.holders.filter((h) => h.until > now).length}/${slots.limit ?? "?"}`,
          String(slots.waiters.filter((w) => w.until > now).length),
        ]),
      ];
      for (const line of renderTable(rows, ["left", "right", "right"])) writeLine(out, `  ${line}`);
    }
    return 0;
  } finally {
    await nc.close();
  }
}
