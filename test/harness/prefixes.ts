// Parent prefixes for cross-package tests, built from the recorded parent turns.
import { createForkPrefix } from "@forkd/core";
import type { ForkPrefix } from "@forkd/protocol";
import { type FixtureName, loadFixture } from "@forkd/testing";

/** The fixture's prefix, with one more tool in the parent's tool array (one served by the parent's tool host). */
export async function prefixWithParentTool(fixtureName: FixtureName, toolName: string): Promise<ForkPrefix> {
  const fixture = await loadFixture(fixtureName);
  const request = fixture.request as { tools: { name: string }[] };
  const withTool = {
    ...request,
    tools: [...request.tools, { name: toolName, description: "Notes", input_schema: { type: "object" } }],
  };
  return createForkPrefix(withTool, fixture.response);
}
