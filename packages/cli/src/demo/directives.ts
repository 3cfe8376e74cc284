// The demo's children: what each is asked to do. Short, tool-free answers, so that each child is one
// model turn and "the same work without forking" is one request per child.

/** One child of the demo. */
export interface DemoDirective {
  /** A short name, the label when the parent's reply has no tool call for this child. */
  name: string;
  directive: string;
}

const ASK = "Answer from the conversation above only, without calling any tool, in at most five sentences.";

const DIRECTIVES: readonly DemoDirective[] = [
  {
    name: "codec review",
    directive: `Review the wire codec for inputs it accepts but should reject. ${ASK}`,
  },
  { name: "abort paths", directive: `Name the riskiest places in the abort handling and why. ${ASK}` },
  { name: "warm-first", directive: `Explain how warm-first fan-out keeps the prompt cache warm. ${ASK}` },
  { name: "registry tests", directive: `Propose two tests for the run registry's compare-and-set. ${ASK}` },
  {
    name: "replay check",
    directive: `Say how to prove the event log replay has no gaps or duplicates. ${ASK}`,
  },
  { name: "drain", directive: `Describe what a daemon must do on SIGTERM to lose no run. ${ASK}` },
  { name: "budget", directive: `Suggest how a fork should stop when its cost budget is reached. ${ASK}` },
  {
    name: "tool ledger",
    directive: `Explain why a tool call with a recorded result must never run again. ${ASK}`,
  },
];

/**
 * The directives of `count` children. Against the simulator each gets a `@sim text` line, so that the
 * children answer with a few hundred tokens of different lengths, as real ones would.
 */
export function demoDirectives(count: number, simulated: boolean): DemoDirective[] {
  return Array.from({ length: count }, (_, i) => {
    const base = DIRECTIVES[i % DIRECTIVES.length]!;
    const round = Math.floor(i / DIRECTIVES.length);
    const name = round === 0 ? base.name : `${base.name} ${round + 1}`;
    const directive =
      round === 0 ? base.directive : `${base.directive} (Take ${round + 1}: a different angle.)`;
    return {
      name,
      directive: simulated ? `${directive}\n@sim text ${150 + ((i * 37) % 5) * 30}` : directive,
    };
  });
}
