// CPU time of this process and of other processes (nats-server, daemon processes), to say where the
// time of a CPU-bound benchmark went.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU time (user + system) of `pid` so far, from /proc; NaN when unreadable. @unit ms */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) / TICKS_PER_SECOND) * 1000;
  } catch {
    return Number.NaN;
  }
}

/** Measures CPU use over an interval: this process, its event loop, and the given other processes. */
export class CpuMeter {
  readonly #startCpu = process.cpuUsage();
  readonly #startElu = performance.eventLoopUtilization();
  readonly #startWall = performance.now();
  readonly #others: Map<string, { pid: number; start: number }>;

  constructor(others: Record<string, number | undefined> = {}) {
    this.#others = new Map(
      Object.entries(others)
        .filter((entry): entry is [string, number] => entry[1] !== undefined)
        .map(([name, pid]) => [name, { pid, start: processCpuMs(pid) }]),
    );
  }

  /** CPU time used since the meter started, by this process (`this_process_ms`) and each other process (`<name>_ms`). @unit ms */
  readMs(): Record<string, number> {
    const cpu = process.cpuUsage(this.#startCpu);
    const result: Record<string, number> = { this_process_ms: (cpu.user + cpu.system) / 1000 };
    for (const [name, { pid, start }] of this.#others) result[`${name}_ms`] = processCpuMs(pid) - start;
    return result;
  }

  /** Cores used (CPU time / wall time) by this process and each other process, and this event loop's utilisation. */
  read(): Record<string, number> {
    const wall = performance.now() - this.#startWall;
    const cpu = process.cpuUsage(this.#startCpu);
    const result: Record<string, number> = {
      wall_ms: Math.round(wall),
      this_process_cores: round3((cpu.user + cpu.system) / 1000 / wall),
      this_event_loop_utilisation: round3(performance.eventLoopUtilization(this.#startElu).utilization),
    };
    for (const [name, { pid, start }] of this.#others) {
      result[`${name}_cores`] = round3((processCpuMs(pid) - start) / wall);
    }
    return result;
  }
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
