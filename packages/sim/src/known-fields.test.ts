// The simulator's field lists against the request types of @anthropic-ai/sdk, the source the
// project did not write: `pnpm typecheck` fails when an SDK upgrade adds or removes a field.
import type {
  BetaAssistantMessageParam,
  BetaImageBlockParam,
  BetaRedactedThinkingBlockParam,
  BetaRequestDocumentBlock,
  BetaRequestToolAdditionBlock,
  BetaRequestToolRemovalBlock,
  BetaSystemMessageParam,
  BetaTextBlockParam,
  BetaThinkingBlockParam,
  BetaTool,
  BetaToolResultBlockParam,
  BetaToolUseBlockParam,
  BetaUserMessageParam,
  MessageCreateParamsNonStreaming,
} from "@anthropic-ai/sdk/resources/beta/messages/messages";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  type BLOCK_FIELDS,
  type CUSTOM_TOOL_FIELDS,
  type MESSAGE_FIELDS,
  REQUEST_FIELDS,
  type SYSTEM_MESSAGE_FIELDS,
} from "./known-fields.js";

type Fields<T> = Exclude<keyof T, symbol | number>;

describe("the simulator knows exactly the SDK's fields", () => {
  it("of a request (betas go in the header)", () => {
    expectTypeOf<(typeof REQUEST_FIELDS)[number]>().toEqualTypeOf<
      Exclude<Fields<MessageCreateParamsNonStreaming>, "betas">
    >();
    expect(new Set(REQUEST_FIELDS).size).toBe(REQUEST_FIELDS.length);
  });

  it("of messages", () => {
    expectTypeOf<(typeof MESSAGE_FIELDS)[number]>().toEqualTypeOf<Fields<BetaUserMessageParam>>();
    expectTypeOf<(typeof MESSAGE_FIELDS)[number]>().toEqualTypeOf<Fields<BetaAssistantMessageParam>>();
    expectTypeOf<(typeof SYSTEM_MESSAGE_FIELDS)[number]>().toEqualTypeOf<Fields<BetaSystemMessageParam>>();
  });

  it("of blocks and tools", () => {
    expectTypeOf<(typeof BLOCK_FIELDS.text)[number]>().toEqualTypeOf<Fields<BetaTextBlockParam>>();
    expectTypeOf<(typeof BLOCK_FIELDS.tool_use)[number]>().toEqualTypeOf<Fields<BetaToolUseBlockParam>>();
    expectTypeOf<(typeof BLOCK_FIELDS.tool_result)[number]>().toEqualTypeOf<
      Fields<BetaToolResultBlockParam>
    >();
    expectTypeOf<(typeof BLOCK_FIELDS.thinking)[number]>().toEqualTypeOf<Fields<BetaThinkingBlockParam>>();
    expectTypeOf<(typeof BLOCK_FIELDS.redacted_thinking)[number]>().toEqualTypeOf<
      Fields<BetaRedactedThinkingBlockParam>
    >();
    expectTypeOf<(typeof BLOCK_FIELDS.image)[number]>().toEqualTypeOf<Fields<BetaImageBlockParam>>();
    expectTypeOf<(typeof BLOCK_FIELDS.document)[number]>().toEqualTypeOf<Fields<BetaRequestDocumentBlock>>();
    expectTypeOf<(typeof BLOCK_FIELDS.tool_addition)[number]>().toEqualTypeOf<
      Fields<BetaRequestToolAdditionBlock>
    >();
    expectTypeOf<(typeof BLOCK_FIELDS.tool_removal)[number]>().toEqualTypeOf<
      Fields<BetaRequestToolRemovalBlock>
    >();
    expectTypeOf<(typeof CUSTOM_TOOL_FIELDS)[number]>().toEqualTypeOf<Fields<BetaTool>>();
  });
});
