// The baseline of several benchmarks: the in-process fork (what an agent CLI does today), with the
// same Anthropic client against the same simulator.
import { InProcessForkSubagent, type ToolDispatcher } from "@forkd/core";
import { SIM_API_KEY, type SimEndpoint, simLlm } from "./cluster.js";

// The benchmarks' directives call no tools; a call would be a bug in the benchmark, reported as such.
const noTools: ToolDispatcher = {
  execute: async (call) => ({ content: `no tools in this benchmark (${call.name})`, isError: true }),
  isSafeToRepeat: () => false,
};

/** An in-process fork subagent whose model calls go to `sim`. */
export function inProcessForks(sim: SimEndpoint, apiKey = SIM_API_KEY): InProcessForkSubagent {
  return new InProcessForkSubagent({ llm: simLlm(sim, apiKey), dispatcherFactory: () => noTools });
}
