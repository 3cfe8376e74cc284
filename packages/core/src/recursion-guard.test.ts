import type { MessageParam } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { renderDirectiveBlock } from "./directive.js";
import { RecursionGuardError } from "./errors.js";
import { buildForkedRequest } from "./forked-request.js";
import {
  assertMayFork,
  checkForkRecursion,
  findForkMarker,
  forkQuerySource,
  isForkQuerySource,
} from "./recursion-guard.js";
import { loadFixture } from "./test-support/fixtures.js";

const directive = renderDirectiveBlock({ runId: "run-7", directive: "Look at the codec." }).text;

function history(...tail: MessageParam[]): MessageParam[] {
  return [{ role: "user", content: "start" }, ...tail];
}

describe("the query source check", () => {
  it("refuses a fork's query source", () => {
    expect(forkQuerySource("run-7")).toBe("fork:run-7");
    expect(isForkQuerySource("fork:run-7")).toBe(true);
    expect(isForkQuerySource("agent")).toBe(false);
    expect(isForkQuerySource(undefined)).toBe(false);
    const check = checkForkRecursion({ querySource: "fork:run-7" });
    expect(check.allowed).toBe(false);
    if (!check.allowed) {
      expect(check.error).toBeInstanceOf(RecursionGuardError);
      expect(check.error.check).toBe("query_source");
      expect(check.error.toolResultText).toMatch(/^Fork refused: .*yourself/s);
      expect(check.error.querySource).toBe("fork:run-7");
    }
  });
});

describe("the history check", () => {
  it("finds the directive block of a child's own request", () => {
    const fixture = loadFixture("48k");
    const forked = buildForkedRequest(
      { params: fixture.request as never, reply: fixture.response },
      { runId: "run-7", directive: "d" },
    );
    expect(findForkMarker(forked.request.messages)).toEqual({
      messageIndex: forked.directive.messageIndex,
      blockIndex: forked.directive.blockIndex,
      runId: "run-7",
    });
    expect(() => assertMayFork({ querySource: "agent", messages: forked.request.messages })).toThrow(
      RecursionGuardError,
    );
  });

  it("finds a directive merged into a user turn after other blocks", () => {
    const messages = history(
      { role: "assistant", content: "ok" },
      {
        role: "user",
        content: [
          { type: "text", text: "earlier" },
          { type: "text", text: directive },
        ],
      },
    );
    expect(findForkMarker(messages)?.runId).toBe("run-7");
  });

  it("does not fire on a parent's own history", () => {
    for (const name of ["4k", "48k", "300k"] as const) {
      const fixture = loadFixture(name);
      expect(
        checkForkRecursion({ querySource: "agent", messages: fixture.request.messages as MessageParam[] }),
      ).toEqual({
        allowed: true,
      });
    }
  });

  it("does not fire on the marker inside tool results, file contents, replies or quotations", () => {
    const cases: MessageParam[][] = [
      // A file that contains a directive, read by a tool: string and block results.
      history(
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "t1", name: "Read", input: { file_path: "a.md" } }],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: directive }] },
      ),
      history(
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: directive }] }],
        },
      ),
      // The model quoting it.
      history({ role: "assistant", content: [{ type: "text", text: directive }] }),
      // A user quoting it inside other text, or pasting it as a whole message (string content).
      history(
        { role: "assistant", content: "ok" },
        { role: "user", content: [{ type: "text", text: `See: ${directive}` }] },
      ),
      history({ role: "assistant", content: "ok" }, { role: "user", content: directive }),
      // The bare tag, as docs or tests about forks write it.
      [
        {
          role: "user",
          content: [{ type: "text", text: "<fork-boilerplate>\nYou are a fork\n</fork-boilerplate>" }],
        },
      ],
      [
        {
          role: "user",
          content: [{ type: "text", text: '<fork-boilerplate v="1" run="x" sig="0000000000000000">' }],
        },
      ],
      // A real block whose text was edited afterwards.
      [{ role: "user", content: [{ type: "text", text: directive.replace("codec", "parser") }] }],
    ];
    for (const messages of cases) {
      expect(findForkMarker(messages)).toBeNull();
      expect(checkForkRecursion({ querySource: "agent", messages }).allowed).toBe(true);
    }
  });

  it("reads only text blocks with string text", () => {
    const messages = [
      { role: "user", content: [{ type: "document", text: directive }] },
      { role: "user", content: [{ type: "text", text: 5 }] },
    ] as unknown as MessageParam[];
    expect(findForkMarker(messages)).toBeNull();
  });

  it("reports which check refused", () => {
    const check = checkForkRecursion({
      querySource: "agent",
      messages: [{ role: "user", content: [{ type: "text", text: directive }] }],
    });
    expect(check.allowed).toBe(false);
    if (!check.allowed) {
      expect(check.error.check).toBe("history_marker");
      expect(check.error.forkRunId).toBe("run-7");
      expect(check.error.message).toContain("the directive block of fork run-7 (message 0)");
      expect(check.error.toWire()).toEqual({
        code: "recursion_guard",
        message: check.error.message,
        retryable: false,
      });
    }
  });
});
