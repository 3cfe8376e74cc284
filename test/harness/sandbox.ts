// The real bubblewrap sandbox for tests that run a model's commands in it.
import { probeSandbox, type Sandbox } from "@forkd/daemon";

/** The sandbox the daemon would use; throws, saying why, where bubblewrap cannot run. */
export function requireBubblewrap(): Sandbox {
  const probed = probeSandbox();
  if (typeof probed === "string") throw new Error(`these tests need bubblewrap: ${probed}`);
  return probed;
}
