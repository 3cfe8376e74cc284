// `forkd ps`: the registry (JetStream KV) as two tables, daemons and runs, or as JSON.
import { type ForkResources, getRunState } from "@forkd/client";
import { totalTokensOf } from "@forkd/core";
import { type DaemonInfo, daemonInfoCodec, type RunState, RunStatusSchema } from "@forkd/protocol";
import type { KV } from "@nats-io/kv";
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
  json: { type: "boolean" },
} as const;

const DEFAULT_TABLE_LIMIT = 50;

async function keysOf(kv: KV): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of await kv.keys()) keys.push(key);
  return keys;
}

/** Every daemon entry of the registry; malformed entries are skipped. */
export async function listDaemons(resources: ForkResources): Promise<DaemonInfo[]> {
  const daemons: DaemonInfo[] = [];
  for (const key of await keysOf(resources.daemons)) {
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

/** Every run entry of the registry, newest first; malformed entries are skipped. */
export async function listRuns(resources: ForkResources): Promise<RunState[]> {
  const keys = await keysOf(resources.runs);
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
    const [daemons, allRuns] = await Promise.all([listDaemons(resources), listRuns(resources)]);
    const matching = statuses === undefined ? allRuns : allRuns.filter((run) => statuses.has(run.status));
    const out = context.io.stdout;
    if (values.json) {
      const runs = limit === undefined ? matching : matching.slice(0, limit);
      writeLine(out, JSON.stringify({ daemons, runs }, null, 2));
      return 0;
    }
    const runs = matching.slice(0, limit ?? DEFAULT_TABLE_LIMIT);
    const now = Date.now();
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
    const shown = runs.length < matching.length ? ` — newest ${runs.length} of ${matching.length}` : "";
    writeLine(out, style.bold(`RUNS (${matching.length})${shown}`));
    if (runs.length === 0) writeLine(out, "  none");
    else {
      const rows = [
        ["RUN ID", "STATUS", "ATTEMPT", "DAEMON", "LABEL", "AGE", "TOKENS", "COST"],
        ...runs.map((run) => {
          const usage = run.usage;
          const tokens = usage === undefined ? "-" : formatCompact(totalTokensOf(usage));
          return [
            run.run_id,
            run.status,
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
    return 0;
  } finally {
    await nc.close();
  }
}
