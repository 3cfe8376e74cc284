// The recorded parent turns (about 4k, 48k and 300k tokens) that tests and benchmarks fork from.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { FixtureError } from "./errors.js";

/** The sizes of the recorded parent turns, in tokens (roughly: characters / 4). */
export type FixtureName = "4k" | "48k" | "300k";

/** The sizes {@link loadFixture} accepts, smallest first. */
export const FIXTURE_NAMES: readonly FixtureName[] = ["4k", "48k", "300k"];

/**
 * The parent's last request, in Anthropic Messages API form. Only the fields every fixture has are
 * typed; validate with `@forkd/protocol` where the exact shape matters.
 */
export interface FixtureRequest {
  model: string;
  max_tokens: number;
  system?: unknown;
  tools?: unknown[];
  messages: unknown[];
  [field: string]: unknown;
}

/** The parent's reply to {@link FixtureRequest}: an assistant message, typically ending in `tool_use`. */
export interface FixtureResponse {
  role: string;
  content: unknown[];
  [field: string]: unknown;
}

/** One recorded parent turn: the request the parent sent and the reply it got. */
export interface ParentTurnFixture {
  /** A one-line summary, e.g. "parent turn: ~4254 tokens (chars/4), 3 messages, ending tool_use". */
  description: string;
  /** The `anthropic-beta` list the parent sent, when it sent one (the 300k turn needs the 1M window's). */
  betas?: string[];
  request: FixtureRequest;
  response: FixtureResponse;
}

/**
 * The absolute path of a fixture file (`packages/testing/fixtures/parent-turn-<name>.json`).
 * Resolved relative to this module, so it works from `src` and from `dist`.
 *
 * @param name - the fixture's size.
 */
export function fixturePath(name: FixtureName): string {
  return fileURLToPath(new URL(`../fixtures/parent-turn-${name}.json`, import.meta.url));
}

/**
 * Reads and parses a fixture. Each call returns a fresh object, so callers may mutate it.
 *
 * @param name - the fixture's size.
 * @throws {@link FixtureError} when the file is missing, is not JSON, or lacks the expected shape.
 */
export async function loadFixture(name: FixtureName): Promise<ParentTurnFixture> {
  const path = fixturePath(name);
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch (cause) {
    throw new FixtureError(`cannot read fixture ${name} at ${path}`, { path, cause });
  }
  if (!isParentTurnFixture(parsed)) {
    throw new FixtureError(
      `fixture ${name} at ${path} is not { description, request: { model, max_tokens, messages }, response: { role, content } }`,
      { path },
    );
  }
  return parsed;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isParentTurnFixture(value: unknown): value is ParentTurnFixture {
  if (!isRecord(value) || typeof value.description !== "string") return false;
  const { request, response } = value;
  return (
    isRecord(request) &&
    typeof request.model === "string" &&
    typeof request.max_tokens === "number" &&
    Array.isArray(request.messages) &&
    isRecord(response) &&
    typeof response.role === "string" &&
    Array.isArray(response.content) &&
    (value.betas === undefined ||
      (Array.isArray(value.betas) && value.betas.every((b) => typeof b === "string")))
  );
}
