// What the Gemini fork tests read on the simulator: a request's field as its sender serialised it,
// and the explicit caches a key holds.
import { expect } from "vitest";

/** The raw JSON text of `body[field]` as it appears in `raw` (the serialiser's own bytes). */
export function rawField(raw: string, field: string): string {
  const value = JSON.stringify((JSON.parse(raw) as Record<string, unknown>)[field]);
  expect(raw).toContain(`"${field}":${value}`);
  return value;
}

/** The resource names of the explicit caches `apiKey` holds on the simulator at `simUrl`. */
export async function geminiCacheNames(simUrl: string, apiKey: string): Promise<string[]> {
  const listed = (await (await fetch(`${simUrl}/v1beta/cachedContents?key=${apiKey}`)).json()) as {
    cachedContents?: { name: string }[];
  };
  return (listed.cachedContents ?? []).map((cache) => cache.name);
}
