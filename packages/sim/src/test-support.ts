// Helpers shared by this package's tests (excluded from the build).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Sim } from "./server.js";
import type {
  CacheControl,
  Message,
  MessageResponse,
  MessagesRequest,
  ToolDefinition,
  Usage,
} from "./types.js";

/** Exactly `n` characters, deterministic, different for each label, free of `@sim`. */
export function chars(n: number, label: string): string {
  const unit = `${label} lorem ipsum dolor sit amet `;
  return unit.repeat(Math.ceil(n / unit.length) + 1).slice(0, n);
}

/** Text of exactly `tokens` tokens by the simulator's documented rule (4 characters per token). */
export function tokensOf(tokens: number, label: string): string {
  return chars(tokens * 4, label);
}

/** Text of exactly `tokens` tokens that starts with `@sim` script lines. */
export function scripted(tokens: number, label: string, script: string): string {
  const head = `${script}\n`;
  return head + chars(tokens * 4 - head.length, label);
}

/** A tool definition whose JSON (without cache_control) is exactly `tokens` × 4 characters. */
export function tool(name: string, tokens: number, cacheControl?: CacheControl): ToolDefinition {
  const bare = { name, description: "", input_schema: { type: "object" } };
  const pad = tokens * 4 - JSON.stringify(bare).length;
  if (pad < 0) throw new Error(`tool ${name} cannot be as small as ${tokens} tokens`);
  const t: ToolDefinition = { name, description: chars(pad, name), input_schema: { type: "object" } };
  if (cacheControl !== undefined) t.cache_control = cacheControl;
  return t;
}

export const EPHEMERAL: CacheControl = { type: "ephemeral" };
export const ONE_HOUR: CacheControl = { type: "ephemeral", ttl: "1h" };

/** A text block, with cache_control when given. */
export function text(
  body: string,
  cacheControl?: CacheControl,
): { type: "text"; text: string; cache_control?: CacheControl } {
  return cacheControl === undefined
    ? { type: "text", text: body }
    : { type: "text", text: body, cache_control: cacheControl };
}

export interface Posted<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

/** POSTs JSON to the simulator over real HTTP. */
export async function post<T = MessageResponse>(
  sim: Sim,
  body: unknown,
  options: { key?: string | undefined; path?: string; betas?: readonly string[] | undefined } = {},
): Promise<Posted<T>> {
  const res = await fetch(`${sim.url}${options.path ?? "/v1/messages"}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
      "x-api-key": options.key ?? "test-key",
      // An absent header must be absent: fetch would send an undefined value as "undefined".
      ...(options.betas === undefined ? {} : { "anthropic-beta": options.betas.join(",") }),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

/** The usage numbers a test asserts. */
export interface ExpectedUsage {
  input: number;
  read: number;
  write5m: number;
  write1h: number;
}

/** The same numbers from a response's usage. */
export function usageOf(u: Usage): ExpectedUsage {
  return {
    input: u.input_tokens,
    read: u.cache_read_input_tokens,
    write5m: u.cache_creation.ephemeral_5m_input_tokens,
    write1h: u.cache_creation.ephemeral_1h_input_tokens,
  };
}

export interface Fixture {
  description: string;
  request: MessagesRequest;
  response: { role: "assistant"; content: Array<{ type: string; id?: string; [k: string]: unknown }> };
}

/** Loads a fixture from packages/fixtures/turns. */
export function loadFixture(name: "parent-turn-4k" | "parent-turn-48k" | "parent-turn-300k"): Fixture {
  const file = fileURLToPath(new URL(`../../fixtures/turns/${name}.json`, import.meta.url));
  return JSON.parse(readFileSync(file, "utf8")) as Fixture;
}

export const PLACEHOLDER = "Fork started — processing in background";

/**
 * Child i of the fork shape: the parent's messages (its cache_control kept), the parent's reply,
 * then one placeholder tool_result per tool_use (cache_control on the last) and the directive.
 */
export function forkChild(
  parent: MessagesRequest,
  reply: Fixture["response"],
  directive: string,
): MessagesRequest {
  const uses = reply.content.filter((b) => b.type === "tool_use");
  const results = uses.map((u, i) => ({
    type: "tool_result" as const,
    tool_use_id: u.id as string,
    content: PLACEHOLDER,
    ...(i === uses.length - 1 ? { cache_control: EPHEMERAL } : {}),
  }));
  return {
    ...parent,
    messages: [
      ...parent.messages,
      { role: "assistant", content: reply.content as NonNullable<Message["content"]> },
      { role: "user", content: [...results, { type: "text", text: directive }] },
    ],
  };
}

/** A value written exactly as given: a number's text as a client in another language writes it. */
export class Written {
  constructor(readonly text: string) {}
}
/** An object whose keys stay in the given order (JavaScript lists integer-like keys first). */
export class Ordered {
  constructor(readonly entries: ReadonlyArray<readonly [string, unknown]>) {}
}
export const written = (number: string) => new Written(number);
export const ordered = (...entries: Array<readonly [string, unknown]>) => new Ordered(entries);

export interface Style {
  /** Indent as `json.dumps(indent=n)`; none: one line with `", "` and `": "`. */
  indent?: number;
  /** `\uXXXX` for every non-ASCII character, as json.dumps does by default. @default true */
  ensureAscii?: boolean;
}

/** `value` as Python's json.dumps writes it. */
export function pythonJson(value: unknown, style: Style = {}, depth = 0): string {
  const { indent, ensureAscii = true } = style;
  const container = (items: string[], open: string, close: string): string => {
    if (items.length === 0) return open + close;
    if (indent === undefined) return `${open}${items.join(", ")}${close}`;
    const pad = `\n${" ".repeat(indent * (depth + 1))}`;
    return `${open}${pad}${items.join(`,${pad}`)}\n${" ".repeat(indent * depth)}${close}`;
  };
  if (value instanceof Written) return value.text;
  if (typeof value === "string") {
    const quoted = JSON.stringify(value);
    return ensureAscii
      ? quoted.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
      : quoted;
  }
  if (Array.isArray(value))
    return container(
      value.map((v) => pythonJson(v, style, depth + 1)),
      "[",
      "]",
    );
  if (value instanceof Ordered || (typeof value === "object" && value !== null)) {
    const entries = value instanceof Ordered ? value.entries : Object.entries(value);
    const members = entries.map(([k, v]) => `${pythonJson(k, style)}: ${pythonJson(v, style, depth + 1)}`);
    return container(members, "{", "}");
  }
  return JSON.stringify(value);
}

/** The same body read by JavaScript and written again. */
export const javaScriptJson = (value: unknown): string => JSON.stringify(JSON.parse(pythonJson(value)));
