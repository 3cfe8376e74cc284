// Test-only: reads the recorded parent turns straight from packages/fixtures/turns (no import of
// @forkd/fixtures, so core's tests depend on nothing but core and protocol).
import { readFileSync } from "node:fs";
import type { AssistantMessage } from "@forkd/protocol";

export type FixtureName = "4k" | "48k" | "300k";
export const FIXTURE_NAMES: readonly FixtureName[] = ["4k", "48k", "300k"];

export interface ParentTurn {
  description: string;
  request: Record<string, unknown> & { model: string; messages: unknown[] };
  response: AssistantMessage;
}

/** A fresh parse of a fixture on every call, so tests may change what they get. */
export function loadFixture(name: FixtureName): ParentTurn {
  const url = new URL(`../../../fixtures/turns/parent-turn-${name}.json`, import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")) as ParentTurn;
}
