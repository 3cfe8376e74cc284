// The proxy's memory: each agent session's last few turns (the request as sent, its betas, the
// reassembled reply), bounded by count, bytes and idle time, and searchable by a tool call of the
// reply, which is how `forkd mcp` finds the turn a `fork` call came from.
import { isDeepStrictEqual } from "node:util";
import type { VerbatimValue } from "@forkd/protocol";
import type { ToolCall, TurnApi, TurnReply } from "./turn-apis.js";

/** One exchange the proxy saw complete: what the agent sent and what it got back. */
export interface ProxyTurn {
  /** Increases with each turn the proxy records, across sessions. */
  seq: number;
  /** See {@link sessionKeyOf}. */
  session: string;
  /** When the reply finished. @unit ms since epoch */
  at: number;
  /** The API the turn spoke. */
  api: TurnApi;
  /** The request's path and query, e.g. `/v1/messages?beta=true`, a `key` parameter left out. */
  path: string;
  /** The request body as the agent sent it, parsed. */
  request: Record<string, unknown>;
  /** The `anthropic-beta` names the request carried, in order (none for other APIs). */
  betas: string[];
  /** The reply, reassembled when it was streamed, as the API takes it back (see {@link TurnReply}). */
  response: TurnReply;
  /** The reply's tool calls, in order. */
  toolCalls: ToolCall[];
  /** `forkd mcp` instances whose fork tool the request offered. */
  mcpInstances: string[];
  /** Size of the request body. @unit bytes */
  requestBytes: number;
  /**
   * An Anthropic or OpenAI request's values that a JavaScript reading writes differently (from an
   * agent in another language), in the agent's text: a fork sends them as sent (the prefix's
   * `verbatim`, or its native prefix's).
   */
  verbatim?: VerbatimValue[];
}

/** A tool call to look for in recorded replies. */
export interface ToolCallQuery {
  /** Only turns whose request offered this `forkd mcp` instance's tools. */
  mcpInstance?: string;
  /** Only turns of this session. */
  session?: string;
  /** The tool's name; any tool whose name ends in `__<name>` or is `<name>` matches. */
  toolName: string;
  /**
   * The call's input: an object matches a call whose input has each of its fields, deeply equal
   * (an MCP server may drop fields it does not know); anything else must equal the input itself.
   */
  input: unknown;
  /** `tool_use` ids already answered: a turn matches only through a call not in this list. */
  exclude?: readonly string[];
  /**
   * The call's own `tool_use` id, when the agent told the tool (Claude Code and the Agent SDK put it
   * in the MCP request's `_meta["claudecode/toolUseId"]`): only that block matches. Without it, two
   * pending calls with the same input (two sub-agents of one session) cannot be told apart.
   */
  toolUseId?: string;
}

/** A turn and the tool call of its reply that matched a {@link ToolCallQuery}. */
export interface ToolCallMatch {
  turn: ProxyTurn;
  toolUse: ToolCall;
}

/** Limits of a {@link TurnStore}. */
export interface TurnStoreLimits {
  /** Turns kept per session; older ones are dropped. @default 8 */
  turnsPerSession?: number;
  /** Sessions kept; the one idle longest is dropped first. @default 256 */
  sessions?: number;
  /** Request bytes kept in all; the oldest turns are dropped first. @default 512 MiB */
  bytes?: number;
  /** A session idle this long is dropped. @default 3_600_000 @unit ms */
  idleMs?: number;
}

interface Waiter {
  query: ToolCallQuery;
  resolve: (match: ToolCallMatch) => void;
}

/** Bounded in-memory store of the turns the proxy saw. */
export class TurnStore {
  readonly #sessions = new Map<string, ProxyTurn[]>();
  readonly #limits: Required<TurnStoreLimits>;
  readonly #now: () => number;
  readonly #waiters = new Set<Waiter>();
  #seq = 0;
  #bytes = 0;

  constructor(limits: TurnStoreLimits = {}, now: () => number = Date.now) {
    this.#limits = {
      turnsPerSession: limits.turnsPerSession ?? 8,
      sessions: limits.sessions ?? 256,
      bytes: limits.bytes ?? 512 * 1024 * 1024,
      idleMs: limits.idleMs ?? 3_600_000,
    };
    this.#now = now;
  }

  /** Request bytes held now. @unit bytes */
  get bytes(): number {
    return this.#bytes;
  }

  /** Records a finished turn and wakes whoever waits for a call it holds. */
  record(turn: Omit<ProxyTurn, "seq" | "at">): ProxyTurn {
    const recorded: ProxyTurn = { ...turn, seq: ++this.#seq, at: this.#now() };
    const turns = this.#sessions.get(turn.session) ?? [];
    // Re-inserting moves the session to the end of the map: the map's order is least recently used first.
    this.#sessions.delete(turn.session);
    this.#sessions.set(turn.session, turns);
    turns.push(recorded);
    this.#bytes += recorded.requestBytes;
    this.#evict();
    for (const waiter of this.#waiters) {
      const match = matchTurn(recorded, waiter.query);
      if (match === undefined) continue;
      this.#waiters.delete(waiter);
      waiter.resolve(match);
    }
    return recorded;
  }

  /** The sessions held, most recently active last. */
  sessions(): { session: string; turns: number; lastAt: number }[] {
    this.#evict();
    return [...this.#sessions].map(([session, turns]) => ({
      session,
      turns: turns.length,
      lastAt: turns.at(-1)?.at ?? 0,
    }));
  }

  /** A session's turns, oldest first (empty for an unknown session). */
  turnsOf(session: string): readonly ProxyTurn[] {
    this.#evict();
    return this.#sessions.get(session) ?? [];
  }

  /** The newest recorded turn whose reply holds a call matching `query`. */
  findToolCall(query: ToolCallQuery): ToolCallMatch | undefined {
    this.#evict();
    const candidates =
      query.session === undefined ? [...this.#sessions.values()] : [this.#sessions.get(query.session) ?? []];
    let best: ToolCallMatch | undefined;
    for (const turns of candidates) {
      for (let i = turns.length - 1; i >= 0; i--) {
        const match = matchTurn(turns[i]!, query);
        if (match === undefined) continue;
        if (best === undefined || match.turn.seq > best.turn.seq) best = match;
        break;
      }
    }
    return best;
  }

  /**
   * {@link findToolCall}, or waits for a turn to be recorded that matches, up to `timeoutMs`. (An agent
   * calls a tool only after reading the whole reply, which reaches the proxy first; the wait covers a
   * reply whose last bytes are still being decoded.)
   */
  waitForToolCall(query: ToolCallQuery, timeoutMs: number): Promise<ToolCallMatch | undefined> {
    const found = this.findToolCall(query);
    if (found !== undefined || timeoutMs <= 0) return Promise.resolve(found);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        query,
        resolve: (match) => {
          clearTimeout(timer);
          resolve(match);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        resolve(undefined);
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  #evict(): void {
    const now = this.#now();
    for (const [session, turns] of this.#sessions) {
      const last = turns.at(-1);
      if (last !== undefined && now - last.at < this.#limits.idleMs) continue;
      this.#dropSession(session, turns);
    }
    for (const turns of this.#sessions.values()) {
      while (turns.length > this.#limits.turnsPerSession) this.#bytes -= turns.shift()!.requestBytes;
    }
    while (this.#sessions.size > this.#limits.sessions) {
      const [session, turns] = this.#sessions.entries().next().value as [string, ProxyTurn[]];
      this.#dropSession(session, turns);
    }
    while (this.#bytes > this.#limits.bytes) {
      const oldest = this.#oldestSession();
      if (oldest === undefined) break;
      this.#bytes -= oldest[1].shift()!.requestBytes;
      if (oldest[1].length === 0) this.#sessions.delete(oldest[0]);
    }
  }

  #oldestSession(): [string, ProxyTurn[]] | undefined {
    let oldest: [string, ProxyTurn[]] | undefined;
    for (const entry of this.#sessions) {
      const first = entry[1][0];
      if (first !== undefined && (oldest === undefined || first.seq < oldest[1][0]!.seq)) oldest = entry;
    }
    return oldest;
  }

  #dropSession(session: string, turns: ProxyTurn[]): void {
    for (const turn of turns) this.#bytes -= turn.requestBytes;
    this.#sessions.delete(session);
  }
}

/**
 * Whether `name` is the tool `wanted`, directly or as an MCP tool: `mcp__<server>__<wanted>`, or
 * `mcp_<server>_<wanted>` as the Gemini CLI names them.
 */
export function isToolNamed(name: string, wanted: string): boolean {
  return (
    name === wanted ||
    (name.startsWith("mcp__") && name.endsWith(`__${wanted}`)) ||
    (name.startsWith("mcp_") && name.length > `mcp__${wanted}`.length && name.endsWith(`_${wanted}`))
  );
}

function matchTurn(turn: ProxyTurn, query: ToolCallQuery): ToolCallMatch | undefined {
  if (query.session !== undefined && turn.session !== query.session) return undefined;
  if (query.mcpInstance !== undefined && !turn.mcpInstances.includes(query.mcpInstance)) return undefined;
  for (const call of turn.toolCalls) {
    if (!isToolNamed(call.name, query.toolName)) continue;
    if (query.toolUseId !== undefined && call.id !== query.toolUseId) continue;
    if (query.exclude?.includes(call.id)) continue;
    if (!inputMatches(call.input, query.input)) continue;
    return { turn, toolUse: call };
  }
  return undefined;
}

function inputMatches(input: unknown, wanted: unknown): boolean {
  if (wanted === null || typeof wanted !== "object" || Array.isArray(wanted))
    return isDeepStrictEqual(input, wanted);
  if (input === null || typeof input !== "object" || Array.isArray(input)) return false;
  return Object.entries(wanted).every(([key, value]) =>
    isDeepStrictEqual((input as Record<string, unknown>)[key], value),
  );
}
