// Function-call arguments read again from the streamed reply where the SDK's native parse may have
// misread an escaped key. Here the SDK's reading is given wrong on purpose, as V8 12.8+ would make it.
import { describe, expect, it } from "vitest";
import { restoreFunctionCallArgs } from "./gemini-function-args.js";

const chunk = (parts: unknown[]) =>
  `data: ${JSON.stringify({ candidates: [{ content: { role: "model", parts } }] })}`;
const sse = (...chunks: string[]) => `${chunks.join("\r\n\r\n")}\r\n\r\n`;

describe("restoreFunctionCallArgs", () => {
  const written = { file_path: "a.ts", '"': 1 };
  const misread = { file_path: "a.ts", "\\": 1 };

  it("puts back each call's arguments as streamed, in order, beside the other parts", () => {
    const reply = sse(
      chunk([{ text: "Reading." }]),
      chunk([
        { functionCall: { name: "Read", args: written } },
        { functionCall: { name: "Stat", args: { "\n": 2 } } },
      ]),
    );
    const parts = [
      { text: "Reading." },
      { functionCall: { name: "Read", args: misread } },
      { functionCall: { name: "Stat", args: { "\\": 2 } } },
    ];
    restoreFunctionCallArgs(parts, reply);
    expect(parts).toEqual([
      { text: "Reading." },
      { functionCall: { name: "Read", args: written } },
      { functionCall: { name: "Stat", args: { "\n": 2 } } },
    ]);
  });

  it("leaves the SDK's reading when no key in the reply is escaped, the counts disagree, or the copy is not JSON", () => {
    const call = () => [{ functionCall: { name: "Read", args: misread } }];
    const cases: (string | undefined)[] = [
      undefined,
      sse(chunk([{ functionCall: { name: "Read", args: { file_path: "a\\b" } } }])),
      sse(
        chunk([{ functionCall: { name: "Read", args: written } }]),
        chunk([{ functionCall: { name: "Read", args: {} } }]),
      ),
      `${sse(chunk([{ functionCall: { name: "Read", args: written } }]))}data: {"\\"":\n`,
    ];
    for (const reply of cases) {
      const parts = call();
      restoreFunctionCallArgs(parts, reply);
      expect(parts).toEqual(call());
    }
  });
});
