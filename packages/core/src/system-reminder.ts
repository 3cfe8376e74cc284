// The `critical_system_reminder` override: a text block placed after the cache boundary, so changing
// it never invalidates the shared prefix.
import type { TextBlock } from "@forkd/protocol";

/** Wraps `reminder` in `<system-reminder>` as a text block. */
export function renderSystemReminder(reminder: string): TextBlock {
  return { type: "text", text: `<system-reminder>\n${reminder}\n</system-reminder>` };
}
