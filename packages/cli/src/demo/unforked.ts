// The demo's "same work without forking": a child's request as an agent without forks sends it.
import type { LlmRequest } from "@forkd/core";

/** Removes every `cache_control` marker: the request as an agent without forks (and its cache) sends it. */
export function withoutCacheControl(request: LlmRequest): LlmRequest {
  const copy = structuredClone(request) as LlmRequest & { cache_control?: unknown };
  delete copy.cache_control;
  const strip = (block: unknown): void => {
    if (block === null || typeof block !== "object") return;
    const record = block as Record<string, unknown>;
    delete record.cache_control;
    if (record.type === "tool_result" && Array.isArray(record.content)) record.content.forEach(strip);
  };
  for (const tool of (copy.tools ?? []) as unknown[]) strip(tool);
  if (Array.isArray(copy.system)) copy.system.forEach(strip);
  for (const message of copy.messages) if (Array.isArray(message.content)) message.content.forEach(strip);
  return copy;
}
