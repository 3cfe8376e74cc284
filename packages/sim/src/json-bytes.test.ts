import { keptByJavaScript } from "@forkd/protocol/internal";
import { describe, expect, it } from "vitest";
import { mulberry32 } from "./faults.js";
import {
  type CutStats,
  clearMemo,
  type Fidelity,
  MAX_CUT_DEPTH,
  MEMO_MAX_BYTES,
  MEMO_MIN_BYTES,
  MEMO_PER_LENGTH,
  memoBytes,
  parseJsonBytes,
  WHOLE_PARSE_BYTES,
} from "./json-bytes.js";
import { forkChild, loadFixture } from "./test-support.js";

/** What parsing gives: the value, or the error's class and message. */
function outcome(parse: () => unknown): unknown {
  try {
    return { value: parse() };
  } catch (e) {
    return { error: (e as Error).constructor.name, message: (e as Error).message };
  }
}

function sameAsJsonParse(bytes: Buffer): CutStats {
  const stats: CutStats = { scannedBytes: 0, parsedWhole: false, memoHits: 0 };
  expect(outcome(() => parseJsonBytes(bytes, stats))).toStrictEqual(
    outcome(() => JSON.parse(bytes.toString("utf8"))),
  );
  return stats;
}

/** As {@link sameAsJsonParse}, for a valid large body, which must have been cut. */
function cutAsJsonParse(bytes: Buffer): CutStats {
  const stats = sameAsJsonParse(bytes);
  expect(stats.parsedWhole).toBe(false);
  return stats;
}

// Strings that hold every character the cutter looks at, escaped quotes and backslash runs above all.
const TRICKY = [
  '"',
  "\\",
  '\\"',
  '\\\\"',
  "{",
  "}",
  "[",
  "]",
  ",",
  ":",
  "é",
  "😀",
  "\ud83d",
  "\n",
  "\u0000",
  " ",
];

function randomValue(random: () => number, depth: number): unknown {
  const pick = Math.floor(random() * (depth > 3 ? 4 : 7));
  switch (pick) {
    case 0: {
      let s = "";
      const n = Math.floor(random() * 12);
      for (let i = 0; i < n; i++) s += random() < 0.5 ? TRICKY[Math.floor(random() * TRICKY.length)] : "ab";
      return s;
    }
    case 1:
      return Math.floor(random() * 1e6) / 100 - 5000;
    case 2:
      return random() < 0.5 ? null : random() < 0.5;
    case 3:
      return "x".repeat(Math.floor(random() * 4000));
    case 4:
      return Array.from({ length: Math.floor(random() * 6) }, () => randomValue(random, depth + 1));
    default: {
      const object: Record<string, unknown> = {};
      const n = Math.floor(random() * 6);
      for (let i = 0; i < n; i++) object[String(randomValue(random, 9))] = randomValue(random, depth + 1);
      return object;
    }
  }
}

/** A large body: an object whose arrays hold many random values, some of them large. */
function randomBody(seed: number): Buffer {
  const random = mulberry32(seed);
  const body = {
    model: "claude-sonnet-4-6",
    messages: Array.from({ length: 60 }, () => randomValue(random, 1)),
    nested: { deeper: Array.from({ length: 40 }, () => randomValue(random, 2)) },
  };
  const text = random() < 0.5 ? JSON.stringify(body) : JSON.stringify(body, null, random() < 0.5 ? 2 : "\t");
  return Buffer.from(text);
}

describe("parseJsonBytes", () => {
  it("gives JSON.parse's value for forks of the fixtures' parents", () => {
    for (const name of ["parent-turn-48k", "parent-turn-300k"] as const) {
      const fixture = loadFixture(name);
      for (const directive of ["Summarise the tests.", 'Quote "this" \\ and {that}: é 😀']) {
        const child = forkChild(fixture.request, fixture.response, directive);
        cutAsJsonParse(Buffer.from(JSON.stringify({ ...child, stream: true })));
      }
    }
  });

  it("gives JSON.parse's value for random large bodies, compact and indented", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const bytes = randomBody(seed);
      expect(bytes.length).toBeGreaterThan(WHOLE_PARSE_BYTES);
      cutAsJsonParse(bytes);
    }
  });

  it("throws JSON.parse's own error for a malformed large body, wherever it is broken", () => {
    const random = mulberry32(7);
    const valid = randomBody(3);
    const structural = [...valid.keys()].filter((i) => '{}[],:"\\'.includes(String.fromCharCode(valid[i]!)));
    const edits: Array<(b: Buffer, at: number) => Buffer> = [
      (b, at) => b.subarray(0, at),
      (b, at) => Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]),
      (b, at) => Buffer.concat([b.subarray(0, at), Buffer.from(" , "), b.subarray(at)]),
      (b, at) => Buffer.concat([b.subarray(0, at), Buffer.from(":"), b.subarray(at)]),
      (b, at) => Buffer.concat([b.subarray(0, at), Buffer.from('"'), b.subarray(at)]),
      (b, at) => Buffer.concat([b.subarray(0, at), Buffer.from("]"), b.subarray(at + 1)]),
      (b, at) => Buffer.concat([b.subarray(0, at), Buffer.from("}"), b.subarray(at + 1)]),
    ];
    let broken = 0;
    for (let n = 0; n < 300; n++) {
      const at = structural[Math.floor(random() * structural.length)]!;
      const bytes = edits[n % edits.length]!(valid, at);
      sameAsJsonParse(bytes);
      if (!("value" in (outcome(() => JSON.parse(bytes.toString("utf8"))) as object))) broken++;
    }
    expect(broken).toBeGreaterThan(200);
  });

  it.each([
    ["a trailing comma in the body", (big: string) => `{"a":${big},}`],
    ["a trailing comma in a large array", (big: string) => `{"a":[${big},]}`],
    ["a missing colon", (big: string) => `{"a" ${big}}`],
    ["two colons in one member", (big: string) => `{"a":1:${big}}`],
    ["a number as a key", (big: string) => `{1:${big}}`],
    ["a closing brace for an array", (big: string) => `{"a":[${big}}}`],
    ["an empty element", (big: string) => `[1,,${big}]`],
    ["a value after the body", (big: string) => `[${big}] 1`],
    ["a value after a large element", (big: string) => `{"a":[${big} 1]}`],
    ["an unterminated string", (big: string) => `[${big}, "abc]`],
    ["a byte-order mark", (big: string) => `\ufeff[${big}]`],
  ])("refuses %s as JSON.parse does", (_, make) => {
    const big = JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ i, text: "y".repeat(40) })));
    const bytes = Buffer.from(make(big));
    expect(bytes.length).toBeGreaterThan(WHOLE_PARSE_BYTES);
    expect(outcome(() => parseJsonBytes(bytes))).toMatchObject({ error: "SyntaxError" });
    sameAsJsonParse(bytes);
  });

  it("defines keys as JSON.parse does: __proto__ as an own key, a repeated key in its first place with its last value", () => {
    const big = JSON.stringify("z".repeat(WHOLE_PARSE_BYTES));
    const bytes = Buffer.from(`{"b":1,"__proto__":{"polluted":true},"7":0,"big":${big},"b":2,"2":0}`);
    const value = parseJsonBytes(bytes) as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect((value as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.keys(value)).toStrictEqual(["2", "7", "b", "__proto__", "big"]);
    expect(value.b).toBe(2);
    const reference = JSON.parse(bytes.toString("utf8")) as object;
    expect(Object.getOwnPropertyDescriptors(value)).toStrictEqual(
      Object.getOwnPropertyDescriptors(reference),
    );
    cutAsJsonParse(bytes);
  });

  it("keeps empty containers, and cuts a large piece behind any JSON whitespace", () => {
    const big = JSON.stringify(Array.from({ length: 2000 }, () => ({ a: [], b: {}, c: "w".repeat(30) })));
    for (const space of [" ", "\n", "\r", "\t"]) {
      const body = ` \n{ "e" : [ ] , "o" :\t{ } , "big" :${space}${big}${space}, "s" : [ "x" , { } ] }\r\n`;
      const stats = cutAsJsonParse(Buffer.from(body));
      // The body from its brace to its last, then the large piece once more.
      expect(stats.scannedBytes).toBe(body.trim().length + big.length);
    }
    cutAsJsonParse(Buffer.from(`[ [ ], ${big}, { } ]`));
  });

  it("parses a body of exactly WHOLE_PARSE_BYTES whole, and cuts one a byte larger", () => {
    const body = (size: number): Buffer => {
      const bytes = Buffer.from(`["${"q".repeat(size - 4)}"]`);
      expect(bytes.length).toBe(size);
      return bytes;
    };
    expect(sameAsJsonParse(body(WHOLE_PARSE_BYTES))).toStrictEqual({
      scannedBytes: 0,
      parsedWhole: true,
      memoHits: 0,
    });
    expect(sameAsJsonParse(body(WHOLE_PARSE_BYTES + 1))).toStrictEqual({
      scannedBytes: WHOLE_PARSE_BYTES + 1,
      parsedWhole: false,
      memoHits: 0,
    });
  });

  it("parses a piece of exactly WHOLE_PARSE_BYTES whole, and cuts one a byte larger", () => {
    const body = (pieceSize: number): Buffer => {
      const piece = `[${JSON.stringify("p".repeat(pieceSize - 4))}]`;
      expect(piece.length).toBe(pieceSize);
      return Buffer.from(`[${piece}]`);
    };
    const whole = body(WHOLE_PARSE_BYTES);
    expect(sameAsJsonParse(whole).scannedBytes).toBe(whole.length);
    const cut = body(WHOLE_PARSE_BYTES + 1);
    expect(sameAsJsonParse(cut).scannedBytes).toBe(cut.length + WHOLE_PARSE_BYTES + 1);
  });

  it(`cuts no deeper than ${MAX_CUT_DEPTH} levels below the body, so nesting cannot multiply the scanning`, () => {
    const levels = 50;
    const bytes = Buffer.from(
      `${"[".repeat(levels)}${JSON.stringify("d".repeat(2 * WHOLE_PARSE_BYTES))}${"]".repeat(levels)}`,
    );
    const stats = sameAsJsonParse(bytes);
    // The body and one container per level down to MAX_CUT_DEPTH, each two brackets shorter than the last.
    let expected = 0;
    for (let depth = 0; depth <= MAX_CUT_DEPTH; depth++) expected += bytes.length - 2 * depth;
    expect(stats.scannedBytes).toBe(expected);
  });
});

describe("the memo of parsed pieces", () => {
  // A second element that makes every body large enough to be cut (it is one piece of its own).
  const PAD = `,${" ".repeat(WHOLE_PARSE_BYTES)}0]`;
  /** An object piece of exactly `length` bytes, told apart by `tag`. */
  const piece = (length: number, tag: string): string => {
    const text = `{"t":${JSON.stringify(tag.padEnd(length - 8, "-"))}}`;
    expect(text.length).toBe(length);
    return text;
  };
  const first = (text: string): object => (parseJsonBytes(Buffer.from(`[${text}${PAD}`)) as object[])[0]!;

  it("gives a fork of a parent seen before its shared messages from the memo, deeply frozen", () => {
    clearMemo();
    const fixture = loadFixture("parent-turn-48k");
    const bodies = ["one", "two"].map((directive) =>
      Buffer.from(JSON.stringify(forkChild(fixture.request, fixture.response, directive))),
    );
    cutAsJsonParse(bodies[0]!);
    const stats = cutAsJsonParse(bodies[1]!);
    const messages = fixture.request.messages.length;
    // Every message of the parent's prefix is a piece of at least MEMO_MIN_BYTES.
    expect(stats.memoHits).toBeGreaterThanOrEqual(messages);
    const [a, b] = bodies.map((bytes) => parseJsonBytes(bytes) as { messages: unknown[] });
    expect(b!.messages[0]).toBe(a!.messages[0]);
    expect(b!.messages.at(-1)).not.toBe(a!.messages.at(-1));
    const block = (a!.messages[0] as { content: object[] }).content[0]!;
    expect(Object.isFrozen(a!.messages[0])).toBe(true);
    expect(Object.isFrozen(block)).toBe(true);
    expect(() => {
      (block as { text: string }).text = "changed";
    }).toThrow(TypeError);
  });

  it(`keeps pieces of ${MEMO_MIN_BYTES} bytes and more, not smaller ones`, () => {
    clearMemo();
    const atLimit = piece(MEMO_MIN_BYTES, "at");
    expect(first(atLimit)).toBe(first(atLimit));
    const under = piece(MEMO_MIN_BYTES - 1, "under");
    expect(first(under)).not.toBe(first(under));
    expect(first(under)).toStrictEqual(JSON.parse(under));
  });

  it(`keeps the ${MEMO_PER_LENGTH} newest pieces of one length; a piece of the same length and other bytes is another piece`, () => {
    clearMemo();
    const pieces = Array.from({ length: MEMO_PER_LENGTH + 1 }, (_, i) => piece(200, `piece ${i}`));
    const values = pieces.map(first);
    for (let i = 1; i <= MEMO_PER_LENGTH; i++) {
      expect(first(pieces[i]!)).toBe(values[i]);
      expect(first(pieces[i]!)).toStrictEqual(JSON.parse(pieces[i]!));
    }
    expect(first(pieces[0]!)).not.toBe(values[0]);
  });

  it(`holds at most MEMO_MAX_BYTES (${MEMO_MAX_BYTES}) of pieces, and starts again past it`, () => {
    clearMemo();
    const kept = piece(1000, "kept");
    const keptValue = first(kept);
    let length = WHOLE_PARSE_BYTES;
    // Distinct lengths (the memo keeps only a few of one length), each at most WHOLE_PARSE_BYTES (a
    // larger one would be cut), the last one filling the memo to the byte.
    while (MEMO_MAX_BYTES - memoBytes() > WHOLE_PARSE_BYTES) {
      first(piece(Math.min(length--, MEMO_MAX_BYTES - memoBytes() - 1000), "fill"));
    }
    first(piece(MEMO_MAX_BYTES - memoBytes(), "last"));
    expect(memoBytes()).toBe(MEMO_MAX_BYTES);
    expect(first(kept)).toBe(keptValue);
    first(piece(500, "one more"));
    // Started again with that piece, then the body's second element (PAD without its comma and bracket).
    expect(memoBytes()).toBe(500 + PAD.length - 2);
    expect(first(kept)).not.toBe(keptValue);
  });
});

describe("what a JavaScript reading keeps (the fidelity of a parse)", () => {
  /** The value and `kept` of a parse that asked for it. */
  const parseKept = (bytes: Buffer, stats?: CutStats): { value: unknown; kept: boolean } => {
    const fidelity: Fidelity = { kept: false };
    const value = parseJsonBytes(bytes, stats, fidelity);
    return { value, kept: fidelity.kept };
  };

  // Texts for a value, and whether a JavaScript reading writes each back as it is.
  const WRITTEN = [
    ["1", true],
    ["0.25", true],
    ["12345678901234567000", true],
    ['{"2":0,"b":1}', true],
    ["1.0", false],
    ["-0", false],
    ["1e5", false],
    ["12345678901234567890", false],
    ['{"b":1,"2":0}', false],
  ] as const;
  const MARK = "@@value@@";

  /** A random body holding `marks` values to be written in, compact or indented. */
  function markedBody(seed: number, marks: number, large: boolean): string {
    const random = mulberry32(seed);
    const items = Array.from({ length: large ? 60 : 6 }, () => randomValue(random, 1));
    for (let m = 0; m < marks; m++) {
      const at = Math.floor(random() * items.length);
      items[at] = random() < 0.5 ? { deep: [MARK, items[at]] } : MARK;
    }
    const body = { model: "claude-sonnet-4-6", messages: items };
    return random() < 0.5 ? JSON.stringify(body) : JSON.stringify(body, null, 2);
  }

  it("is kept for every fork of the fixtures' parents, cut or parsed whole, and from the memo", () => {
    clearMemo();
    for (const name of ["parent-turn-4k", "parent-turn-48k", "parent-turn-300k"] as const) {
      const fixture = loadFixture(name);
      for (const directive of ["Summarise the tests.", 'Quote "this" \\ and {that}: 1.0 é 😀']) {
        const bytes = Buffer.from(
          JSON.stringify({ ...forkChild(fixture.request, fixture.response, directive), stream: true }),
        );
        const stats: CutStats = { scannedBytes: 0, parsedWhole: false, memoHits: 0 };
        expect(parseKept(bytes, stats).kept).toBe(true);
        expect(stats.parsedWhole).toBe(name === "parent-turn-4k");
      }
    }
  });

  it("is not kept when a value anywhere is written otherwise, in a body cut or parsed whole", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const random = mulberry32(1000 + seed);
      const large = seed % 3 !== 0;
      let text = markedBody(seed, 1 + Math.floor(random() * 3), large);
      let kept = true;
      while (text.includes(`"${MARK}"`)) {
        const [written, keeps] = WRITTEN[Math.floor(random() * WRITTEN.length)]!;
        text = text.replace(`"${MARK}"`, written);
        kept &&= keeps;
      }
      const bytes = Buffer.from(text);
      expect(bytes.length > WHOLE_PARSE_BYTES).toBe(large);
      const stats: CutStats = { scannedBytes: 0, parsedWhole: false, memoHits: 0 };
      // From the text, then again from the memo; the value is JSON.parse's either way.
      for (let pass = 0; pass < 2; pass++) {
        const parsed = parseKept(bytes, stats);
        expect(parsed.kept).toBe(kept);
        expect(parsed.value).toStrictEqual(JSON.parse(text));
      }
      expect(stats.parsedWhole).toBe(!large);
      expect(keptByJavaScript(text)).toBe(kept);
    }
  });

  it("is found for a piece the memo holds from a parse that did not ask", () => {
    clearMemo();
    const big = JSON.stringify("b".repeat(WHOLE_PARSE_BYTES));
    const tool = (n: string) =>
      `{"name":"t","description":"${"d".repeat(MEMO_MIN_BYTES)}","input_schema":{"default":${n}}}`;
    const unkept = Buffer.from(`{"tools":[${tool("1.0")},${big}]}`);
    const kept = Buffer.from(`{"tools":[${tool("1")},${big}]}`);
    parseJsonBytes(unkept);
    parseJsonBytes(kept);
    const stats: CutStats = { scannedBytes: 0, parsedWhole: false, memoHits: 0 };
    expect(parseKept(unkept, stats).kept).toBe(false);
    expect(parseKept(kept, stats).kept).toBe(true);
    expect(stats.memoHits).toBe(4);
  });

  it("is not kept when an object the cutter builds has an integer-like key after another", () => {
    const big = JSON.stringify("k".repeat(WHOLE_PARSE_BYTES));
    expect(parseKept(Buffer.from(`{"model":"m","messages":[${big}],"2":0}`)).kept).toBe(false);
    expect(parseKept(Buffer.from(`{"2":0,"model":"m","messages":[${big}]}`)).kept).toBe(true);
    expect(parseKept(Buffer.from(`{"model":"m","content":${big},"2":0}`)).kept).toBe(false);
    // A repeated key: JSON.stringify never writes one, so it is not taken as kept.
    expect(parseKept(Buffer.from(`{"model":"m","messages":[${big}],"model":"n"}`)).kept).toBe(false);
  });
});
