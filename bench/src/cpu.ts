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

/** `pid`'s main thread's time on a CPU and its time runnable but waiting for one, from /proc; null when unreadable. @unit ms */
export function mainThreadScheduleMs(pid: number): { running: number; waiting: number } | null {
  try {
    // schedstat: nanoseconds on a CPU, nanoseconds on a run queue, time slices.
    const [running, waiting] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8")
      .split(" ")
      .map(Number);
    return { running: running! / 1e6, waiting: waiting! / 1e6 };
  } catch {
    return null;
  }
}

/** Measures CPU use over an interval: this process, its event loop, and the given other processes. */
export class CpuMeter {
  readonly #startCpu = process.cpuUsage();
  readonly #startElu = performance.eventLoopUtilization();
  readonly #startWall = performance.now();
  readonly #startMainThread = mainThreadScheduleMs(process.pid);
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

  /**
   * Cores used (CPU time / wall time) by this process and each other process, this event loop's
   * utilisation, and the share of the wall time this process's main thread spent on a CPU and waiting
   * for one (`this_main_thread_running`, `this_main_thread_waiting`; absent where /proc has no
   * schedstat): a saturated event loop whose thread waits is short of cores, not of work.
   */
  read(): Record<string, number> {
    const wall = performance.now() - this.#startWall;
    const cpu = process.cpuUsage(this.#startCpu);
    const result: Record<string, number> = {
      wall_ms: Math.round(wall),
      this_process_cores: round3((cpu.user + cpu.system) / 1000 / wall),
      this_event_loop_utilisation: round3(performance.eventLoopUtilization(this.#startElu).utilization),
    };
    const mainThread = mainThreadScheduleMs(process.pid);
    if (mainThread && this.#startMainThread) {
      result.this_main_thread_running = round3((mainThread.running - this.#startMainThread.running) / wall);
      result.this_main_thread_waiting = round3((mainThread.waiting - this.#startMainThread.waiting) / wall);
    }
    for (const [name, { pid, start }] of this.#others) {
      result[`${name}_cores`] = round3((processCpuMs(pid) - start) / wall);
    }
    return result;
  }
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
