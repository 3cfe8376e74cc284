import { describe, expect, it } from "vitest";
import { capOutput, HeadTailBuffer, truncationMarker, utf8Prefix, utf8Suffix } from "./output.js";

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("capOutput", () => {
  it("returns text of exactly the cap unchanged, and cuts one byte more with a marker", () => {
    expect(capOutput("abcd", 4)).toBe("abcd");
    expect(capOutput("abcde", 4)).toBe("abcd\n[output truncated: 1 of 5 bytes cut]");
    expect(capOutput("abcde", 4, "read with offset")).toBe(
      "abcd\n[output truncated: 1 of 5 bytes cut; read with offset]",
    );
  });

  it("counts UTF-8 bytes and never splits a character", () => {
    // "é" is two bytes: a cap of 3 keeps "aé" (3 bytes); a cap of 2 keeps "a" only.
    expect(capOutput("aéb", 3)).toBe("aé\n[output truncated: 1 of 4 bytes cut]");
    expect(capOutput("aéb", 2)).toBe("a\n[output truncated: 3 of 4 bytes cut]");
  });
});

describe("truncationMarker", () => {
  it("writes the counts with thousands separators", () => {
    expect(truncationMarker(1234, 5678)).toBe("[output truncated: 1,234 of 5,678 bytes cut]");
    expect(truncationMarker(1234, 5678, "hint")).toBe("[output truncated: 1,234 of 5,678 bytes cut; hint]");
  });
});

describe("utf8Prefix and utf8Suffix", () => {
  const text = bytes("aé€b"); // 1 + 2 + 3 + 1 bytes

  it("keep a buffer that fits, whole", () => {
    expect(utf8Prefix(text, 7)).toBe(text);
    expect(utf8Suffix(text, 7)).toBe(text);
  });

  it("cut before a character the limit would split", () => {
    expect(utf8Prefix(text, 6).toString()).toBe("aé€");
    expect(utf8Prefix(text, 5).toString()).toBe("aé");
    expect(utf8Prefix(text, 4).toString()).toBe("aé");
    expect(utf8Prefix(text, 2).toString()).toBe("a");
    expect(utf8Prefix(text, 0).toString()).toBe("");
    expect(utf8Prefix(text, -3).toString()).toBe("");
    // Continuation bytes only (binary output): no character starts before the limit.
    expect(utf8Prefix(Buffer.from([0x80, 0x80, 0x80]), 2).length).toBe(0);
  });

  it("start after a character the limit would split", () => {
    expect(utf8Suffix(text, 4).toString()).toBe("€b");
    expect(utf8Suffix(text, 3).toString()).toBe("b");
    expect(utf8Suffix(text, 5).toString()).toBe("€b");
    expect(utf8Suffix(text, 6).toString()).toBe("é€b");
    expect(utf8Suffix(text, 0).toString()).toBe("");
    expect(utf8Suffix(text, -3).toString()).toBe("");
  });
});

describe("HeadTailBuffer", () => {
  const collect = (cap: number, chunks: string[], hint?: string) => {
    const buffer = new HeadTailBuffer(cap);
    for (const chunk of chunks) buffer.push(bytes(chunk));
    return { text: buffer.toString(hint), total: buffer.totalBytes };
  };

  it("keeps everything up to the cap exactly, in order, across chunks", () => {
    expect(collect(10, ["abc", "defg", "hij"])).toEqual({ text: "abcdefghij", total: 10 });
    expect(collect(10, [])).toEqual({ text: "", total: 0 });
  });

  it("keeps the first and last half of the cap around a marker, cut back to line ends", () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${String(i).padStart(2, "0")}\n`);
    const { text, total } = collect(40, lines, "see the log");
    expect(total).toBe(160);
    // Head: 20 bytes, cut back to its last line end (16); tail: 20 bytes, moved on past its first (16).
    expect(text).toBe(
      "line 00\nline 01\n[output truncated: 128 of 160 bytes cut; see the log]\nline 18\nline 19\n",
    );
  });

  it("splits an odd cap with the extra byte in the tail, and puts a line end before the marker", () => {
    expect(collect(7, ["abcdefghijkl"]).text).toBe("abc\n[output truncated: 5 of 12 bytes cut]\nijkl");
    // A tail that starts with its only line end keeps what follows it.
    expect(collect(6, ["ab", "cdefgh\nij"]).text).toBe("abc\n[output truncated: 6 of 11 bytes cut]\nij");
  });

  it("keeps the last bytes of a long stream whatever its chunking, dropping chunks it no longer needs", () => {
    const chunks = Array.from({ length: 50 }, (_, i) => String.fromCharCode(97 + (i % 26)).repeat(3));
    expect(collect(10, chunks).text).toBe("aaabb\n[output truncated: 140 of 150 bytes cut]\nwwxxx");
  });

  it("cuts without line ends at character boundaries", () => {
    // Head cap 4: "ab" and half a "€" → "ab"; tail cap 4: a last byte of "€" and "xyz" → "xyz".
    expect(collect(8, ["ab€€€€", "xyz"]).text).toBe("ab\n[output truncated: 12 of 17 bytes cut]\nxyz");
  });

  it("ends a head without line ends after its last whole character, whatever the character's width", () => {
    const head = (start: string) => collect(8, [`${start}zzzzzzzzzzzz`]).text.split("\n")[0];
    // The head keeps 4 bytes: whole characters of 1, 2, 3 and 4 bytes stay, a cut one goes.
    expect(head("aéb")).toBe("aéb");
    expect(head("a€")).toBe("a€");
    expect(head("😀")).toBe("😀");
    expect(head("éz")).toBe("ézz");
    expect(head("aaaé")).toBe("aaa");
    expect(head("aa€")).toBe("aa");
    expect(head("a😀")).toBe("a");
    // A whole two-byte character at the very end stays; two bytes of a three-byte one (U+0800) go.
    expect(head("aaé")).toBe("aaé");
    expect(head("aa\u0800")).toBe("aa");
  });

  it("never lets a stray byte of binary output into the head", () => {
    const head = (start: number[]) => {
      const buffer = new HeadTailBuffer(4);
      buffer.push(Buffer.from([...start, 0x41, 0x42, 0x43, 0x44, 0x45]));
      return buffer.toString().split("[")[0];
    };
    // Only continuation bytes: nothing of them is a character.
    expect(head([0x80, 0x80])).toBe("");
    // 0xc0 opens a two-byte sequence: alone at the end of the head it is cut.
    expect(head([0x41, 0xc0])).toBe("A\n");
  });

  it("holds at most the cap plus one chunk in memory, dropping each tail chunk once the later ones cover the tail", () => {
    const buffer = new HeadTailBuffer(4);
    buffer.push(bytes("ab"));
    buffer.push(bytes("cd"));
    expect(buffer.retainedBytes).toBe(4);
    // "ef" alone covers the tail's 2 bytes: "cd" is dropped at that exact boundary.
    buffer.push(bytes("ef"));
    expect(buffer.retainedBytes).toBe(4);
    for (let i = 0; i < 1000; i++) buffer.push(bytes("ghi"));
    expect(buffer.retainedBytes).toBe(5);
    expect(buffer.toString()).toBe("ab\n[output truncated: 3,002 of 3,006 bytes cut]\nhi");
  });

  it("keeps nothing with a cap of 0, and says how much it cut", () => {
    const buffer = new HeadTailBuffer(0);
    buffer.push(bytes("abc"));
    buffer.push(bytes("de"));
    expect(buffer.retainedBytes).toBe(2);
    expect(buffer.toString()).toBe("[output truncated: 5 of 5 bytes cut]\n");
  });

  it("starts the marker on the first line when the head is empty, without a blank line", () => {
    expect(collect(1, ["abc"]).text).toBe("[output truncated: 2 of 3 bytes cut]\nc");
  });

  it("moves a tail on past its first line end, unless that is its last byte", () => {
    // Tail cap 4: "xyz\n" ends at its only line end and is kept whole.
    expect(collect(8, ["0123456789xyz\n"]).text).toBe("0123\n[output truncated: 6 of 14 bytes cut]\nxyz\n");
    // Tail cap 4: "y\nzw" starts with the end of a cut line: it goes.
    expect(collect(8, ["0123456789y\nzw"]).text).toBe("0123\n[output truncated: 8 of 14 bytes cut]\nzw");
  });
});
