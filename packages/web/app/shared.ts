// What the page shares with `forkd watch`, so that both show the same truth: the CLI's run tracker
// (status, daemon, turn, tokens, cache share, cost, elapsed, one line per event), its number formats,
// the protocol's lenient event decoder and subject names, and the pricing table.
export { costOfTokens, defaultPricingTable } from "@forkd/core";
export type { DaemonInfo, ForkEvent, RunState, UsageTotals } from "@forkd/protocol";
export { forkSubjects, isTerminalEvent, PROTOCOL_VERSION } from "@forkd/protocol";
export { decodeEventLenient } from "@forkd/protocol/internal";
export {
  formatAge,
  formatClock,
  formatCompact,
  formatElapsed,
  formatInteger,
  formatPercent,
  formatUsd,
  oneLine,
} from "../../cli/src/format.js";
export {
  cacheReadShare,
  describeEvent,
  elapsedOf,
  isFinalStatus,
  promptTokens,
  type RunDisplayStatus,
  type RunRow,
  RunTracker,
} from "../../cli/src/run-tracker.js";
