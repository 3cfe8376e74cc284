// Checks that a request is one the Anthropic Messages API accepts, as far as message structure goes:
// turn order, tool_use/tool_result pairing, no empty content, breakpoint count and TTL order.
import type { CacheSafeParams, MessageParam } from "@forkd/protocol";
import { countedBreakpoints, MAX_CACHE_BREAKPOINTS } from "./breakpoints.js";

type Block = Record<string, unknown>;

function blocksOf(message: MessageParam): Block[] {
  return Array.isArray(message.content) ? (message.content as Block[]) : [];
}

function toolUseIds(message: MessageParam): string[] {
  return blocksOf(message)
    .filter((block) => block.type === "tool_use")
    .map((block) => String(block.id));
}

/**
 * Every reason the provider would refuse `request`'s structure, as readable sentences; empty when it
 * would accept it. Checked: the first message is the user's; roles alternate strictly; no message and
 * no text block is empty; every `tool_use` is answered by a `tool_result` in the next message, and
 * results come before anything else in it; no `tool_result` answers a call the previous message did
 * not make; the last message is the user's; at most four breakpoints, 1h ones before 5m ones (the
 * automatic one of a top-level `cache_control` included).
 */
export function findRequestProblems(
  request: Pick<CacheSafeParams, "messages" | "tools" | "system">,
): string[] {
  const problems: string[] = [];
  // System messages (mid-conversation-system beta) may sit anywhere: turn order is that of the
  // rest, and two turns of one role with a system message between them are two turns, not one.
  const afterSystem = new Set<MessageParam>();
  const messages = request.messages.filter((message, index) => {
    if (message.role === "system") return false;
    if (request.messages[index - 1]?.role === "system") afterSystem.add(message);
    return true;
  });
  if (messages.length === 0) return ["the request has no messages"];
  if (messages[0]?.role !== "user") problems.push("the first message is not the user's");
  messages.forEach((message, index) => {
    const where = `messages[${index}]`;
    const previous = messages[index - 1];
    if (previous !== undefined && previous.role === message.role && !afterSystem.has(message)) {
      problems.push(`${where} has the same role (${message.role}) as the message before it`);
    }
    // An empty string and an empty list of blocks alike.
    if (message.content.length === 0) {
      problems.push(`${where} has empty content`);
    }
    blocksOf(message).forEach((block, blockIndex) => {
      if (block.type === "text" && (typeof block.text !== "string" || block.text === "")) {
        problems.push(`${where}.content[${blockIndex}] is an empty text block`);
      }
    });
    if (message.role === "user") {
      const asked = previous?.role === "assistant" ? new Set(toolUseIds(previous)) : new Set<string>();
      let seenOther = false;
      for (const block of blocksOf(message)) {
        if (block.type !== "tool_result") {
          seenOther = true;
          continue;
        }
        if (seenOther) problems.push(`${where} has a tool_result after other content`);
        if (!asked.has(String(block.tool_use_id))) {
          problems.push(
            `${where} answers tool_use ${String(block.tool_use_id)}, which the previous message did not make`,
          );
        }
      }
    }
    if (message.role === "assistant") {
      const next = messages[index + 1];
      const answered = new Set(
        next?.role === "user"
          ? blocksOf(next)
              .filter((block) => block.type === "tool_result")
              .map((block) => String(block.tool_use_id))
          : [],
      );
      for (const id of toolUseIds(message)) {
        if (!answered.has(id))
          problems.push(`${where} makes tool_use ${id}, which the next message does not answer`);
      }
    }
  });
  if (messages[messages.length - 1]?.role !== "user") problems.push("the last message is not the user's");
  // A top-level cache_control is one more breakpoint, on the last block.
  const breakpoints = countedBreakpoints(request);
  if (breakpoints.length > MAX_CACHE_BREAKPOINTS) {
    problems.push(
      `the request has ${breakpoints.length} cache breakpoints; at most ${MAX_CACHE_BREAKPOINTS} are allowed`,
    );
  }
  const first5m = breakpoints.findIndex((b) => b.ttl === "5m");
  if (first5m !== -1 && breakpoints.slice(first5m).some((b) => b.ttl === "1h")) {
    problems.push("a 1h cache breakpoint follows a 5m one");
  }
  return problems;
}
