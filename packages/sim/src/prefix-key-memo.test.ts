import { describe, expect, it } from "vitest";
import { prefixKeys } from "./cache.js";
import { PrefixKeyMemo } from "./prefix-key-memo.js";
import { layoutPrompt, type PromptLayout } from "./prompt.js";
import type { MessagesRequest } from "./types.js";

type Message = MessagesRequest["messages"][number];

const PARENT: Message[] = [
  { role: "user", content: [{ type: "text", text: "Read the repository and plan the change 😀." }] },
  { role: "assistant", content: [{ type: "text", text: "I will start with the \ud83d package layout." }] },
  { role: "user", content: [{ type: "text", text: "Go on." }] },
];

function request(
  messages: Message[],
  over: { system?: MessagesRequest["system"] | undefined } & Partial<
    Pick<MessagesRequest, "tool_choice" | "model">
  > = {},
): MessagesRequest {
  return {
    model: "claude-sonnet-4-6",
    max_tokens: 64,
    tools: [{ name: "Read", description: "Reads a file é", input_schema: { type: "object" } }],
    system: [{ type: "text", text: "You are a careful engineer." }],
    ...over,
    messages,
  } as MessagesRequest;
}

function fork(directive: string, over?: Parameters<typeof request>[1]): PromptLayout {
  return layoutPrompt(
    request(
      [
        ...PARENT,
        { role: "assistant", content: [{ type: "text", text: "Forking." }] },
        { role: "user", content: [{ type: "text", text: directive }] },
      ],
      over,
    ),
  );
}

const every = (layout: PromptLayout): Set<number> => new Set(layout.blocks.map((_, i) => i));

describe("PrefixKeyMemo", () => {
  it("gives every request the digests prefixKeys gives it, across requests that share a prefix", () => {
    const memo = new PrefixKeyMemo();
    const layouts = [
      fork("Child one: the tests."),
      fork("Child two: the docs."),
      fork("Child one: the tests."),
      layoutPrompt(request(PARENT)),
      fork("Child six: the CLI.", { tool_choice: { type: "any" } }),
      fork("Child one: the tests.", { system: undefined }),
      fork("Child one: the tests.", { model: "claude-opus-4-1" }),
    ];
    for (const layout of layouts) {
      for (const scope of ["scope-a", "scope-b"]) {
        expect(memo.keys(layout, scope, every(layout))).toEqual(prefixKeys(layout, scope, every(layout)));
      }
    }
  });

  it("tells apart blocks with the same content and another role, type or place", () => {
    const memo = new PrefixKeyMemo();
    const text = "Same words.";
    const asUser = layoutPrompt(request([{ role: "user", content: [{ type: "text", text }] }]));
    const asSecondBlock = layoutPrompt(
      request([
        {
          role: "user",
          content: [
            { type: "text", text: "First." },
            { type: "text", text },
          ],
        },
      ]),
    );
    const asAssistant = layoutPrompt(
      request([
        { role: "user", content: [{ type: "text", text: "First." }] },
        { role: "assistant", content: [{ type: "text", text }] },
      ]),
    );
    for (const layout of [asUser, asSecondBlock, asAssistant, asUser]) {
      expect(memo.keys(layout, "s", every(layout))).toEqual(prefixKeys(layout, "s", every(layout)));
    }
  });

  it("gives the digests of the positions asked for, sparse or adjacent, and none for none", () => {
    const memo = new PrefixKeyMemo();
    const layout = fork("Child one.");
    const last = layout.blocks.length - 1;
    for (const positions of [new Set([last]), new Set([0, last]), new Set([2, 3]), new Set([1])]) {
      expect(memo.keys(layout, "s", positions)).toEqual(prefixKeys(layout, "s", positions));
    }
    expect(memo.keys(layout, "s", new Set()).size).toBe(0);
  });

  it("holds a shared prefix once: a sibling adds only the blocks it does not share", () => {
    const memo = new PrefixKeyMemo();
    const first = fork("Child one: the tests.");
    memo.keys(first, "s", every(first));
    const held = memo.heldChars;
    expect(held).toBe(first.blocks.reduce((sum, b) => sum + b.content.length + 256, 0));
    const sibling = fork("Child two: the docs!");
    memo.keys(sibling, "s", every(sibling));
    expect(memo.heldChars).toBe(held + sibling.blocks.at(-1)!.content.length + 256);
    memo.keys(sibling, "s", every(sibling));
    expect(memo.heldChars).toBe(held + sibling.blocks.at(-1)!.content.length + 256);
  });

  it("starts again when a request finds it holding more than its limit, and not at the limit", () => {
    const first = fork("Child one: the tests.");
    const sizeOfFirst = first.blocks.reduce((sum, b) => sum + b.content.length + 256, 0);
    const second = fork("Child two: the docs!");
    const third = fork("Child three: the CLI");

    const atLimit = new PrefixKeyMemo({ maxChars: sizeOfFirst });
    atLimit.keys(first, "s", every(first));
    atLimit.keys(second, "s", every(second));
    expect(atLimit.resets).toBe(0);
    expect(atLimit.heldChars).toBeGreaterThan(sizeOfFirst);
    expect(atLimit.keys(third, "s", every(third))).toEqual(prefixKeys(third, "s", every(third)));
    expect(atLimit.resets).toBe(1);
    expect(atLimit.heldChars).toBe(third.blocks.reduce((sum, b) => sum + b.content.length + 256, 0));

    const belowLimit = new PrefixKeyMemo({ maxChars: sizeOfFirst - 1 });
    belowLimit.keys(first, "s", every(first));
    expect(belowLimit.keys(second, "s", every(second))).toEqual(prefixKeys(second, "s", every(second)));
    expect(belowLimit.resets).toBe(1);
  });
});
