// Every benchmark, in the order.
import { costBenchmark } from "./b1-cost.js";
import { dispatchBenchmark } from "./b2-dispatch.js";
import { fanOutBenchmark } from "./b3-fanout.js";
import { bytesBenchmark } from "./b4-bytes.js";
import { abortBenchmark } from "./b5-abort.js";
import { throughputBenchmark } from "./b6-throughput.js";
import { failoverBenchmark } from "./b7-failover.js";
import { memoryBenchmark } from "./b8-memory.js";
import { hostileWireBenchmark } from "./b9-hostile-wire.js";
import { proxyBenchmark } from "./b10-proxy.js";
import { scaleBenchmark } from "./b11-scale.js";
import { webBenchmark } from "./b12-web.js";
import { providerCostBenchmark } from "./b13-provider-cost.js";
import { cascadeBenchmark } from "./b14-cascade.js";
import { callLimitBenchmark } from "./b15-call-limit.js";
import type { Benchmark } from "./types.js";

export const benchmarks: readonly Benchmark[] = [
  costBenchmark,
  dispatchBenchmark,
  fanOutBenchmark,
  bytesBenchmark,
  abortBenchmark,
  throughputBenchmark,
  failoverBenchmark,
  memoryBenchmark,
  hostileWireBenchmark,
  proxyBenchmark,
  scaleBenchmark,
  webBenchmark,
  providerCostBenchmark,
  cascadeBenchmark,
  callLimitBenchmark,
];
