import { describe, expect, it } from "vitest";
import { globToRegExp, maxGlobDepth, splitGlobBase } from "./glob-pattern.js";
import { capOutput, HeadTailBuffer } from "./output.js";

const matches = (pattern: string, path: string) => globToRegExp(pattern).test(path);

describe("globToRegExp", () => {
  it("matches * and ? within one segment only", () => {
    expect(matches("*.ts", "a.ts")).toBe(true);
    expect(matches("*.ts", "dir/a.ts")).toBe(false);
    expect(matches("?.md", "a.md")).toBe(true);
    expect(matches("?.md", "ab.md")).toBe(false);
    expect(matches("*", ".env")).toBe(true);
  });

  it("matches ** as zero or more segments", () => {
    expect(matches("**/*.ts", "a.ts")).toBe(true);
    expect(matches("**/*.ts", "x/y/a.ts")).toBe(true);
    expect(matches("src/**/index.ts", "src/index.ts")).toBe(true);
    expect(matches("src/**/index.ts", "src/a/b/index.ts")).toBe(true);
    expect(matches("src/**", "src/a/b")).toBe(true);
    expect(matches("src/**", "srcx/a")).toBe(false);
    expect(matches("**", "any/thing")).toBe(true);
    expect(matches("a**b", "axxb")).toBe(true);
    expect(matches("a**b", "a/b")).toBe(false);
  });

  it("matches braces, nested and with globs inside", () => {
    expect(matches("*.{ts,tsx}", "a.tsx")).toBe(true);
    expect(matches("*.{ts,tsx}", "a.js")).toBe(false);
    expect(matches("{src,test/{unit,e2e}}/*.ts", "test/e2e/a.ts")).toBe(true);
    expect(matches("{a,b*}.txt", "bcd.txt")).toBe(true);
    expect(matches("{a,b.txt", "{a,b.txt")).toBe(true);
  });

  it("matches character classes, negated, never across /", () => {
    expect(matches("file[0-9].txt", "file7.txt")).toBe(true);
    expect(matches("file[0-9].txt", "filex.txt")).toBe(false);
    expect(matches("file[!0-9].txt", "filex.txt")).toBe(true);
    expect(matches("file[^0-9].txt", "file1.txt")).toBe(false);
    expect(matches("a[/]b", "a/b")).toBe(false);
    expect(matches("a[!x]b", "a/b")).toBe(false);
    expect(matches("[]]", "]")).toBe(true);
    expect(matches("a[b", "a[b")).toBe(true);
  });

  it("treats regex metacharacters and escapes literally", () => {
    expect(matches("a+b(c).txt", "a+b(c).txt")).toBe(true);
    expect(matches("a.txt", "abtxt")).toBe(false);
    expect(matches("\\*.txt", "*.txt")).toBe(true);
    expect(matches("\\*.txt", "a.txt")).toBe(false);
  });
});

describe("globToRegExp at the edges of its syntax", () => {
  it("treats ** as segments only when it is a whole segment", () => {
    expect(matches("*x/y", "ax/y")).toBe(true);
    expect(matches("*x/y", "y")).toBe(false);
    expect(matches("a**/b", "ac/b")).toBe(true);
    expect(matches("a**/b", "a/c/b")).toBe(false);
    expect(matches("a**", "a/b")).toBe(false);
    expect(matches("**x", "ax")).toBe(true);
    expect(matches("**x", "a/x")).toBe(false);
    // `a/**` matches `a` itself too.
    expect(matches("src/**", "src")).toBe(true);
  });

  it("reads a trailing backslash as a literal backslash", () => {
    expect(matches("a\\", "a\\")).toBe(true);
    expect(matches("a\\", "aundefined")).toBe(false);
  });

  it("reads a class's negation, escapes and members exactly", () => {
    expect(matches("file[!0-9].txt", "file!.txt")).toBe(true);
    expect(matches("[ab]", "e")).toBe(false);
    expect(matches("a[\\]]b", "a]b")).toBe(true);
    expect(matches("a[\\]]b", "a\\b")).toBe(false);
    expect(matches("[a\\-z]", "-")).toBe(true);
    expect(matches("[a\\-z]", "b")).toBe(false);
  });

  it("reads every alternative of a brace, escapes included", () => {
    expect(matches("{a,b}", "a")).toBe(true);
    expect(matches("{a,b}", "b")).toBe(true);
    expect(matches("{a\\,b,c}", "a,b")).toBe(true);
    expect(matches("{a\\,b,c}", "a")).toBe(false);
    expect(matches("{a\\,b,c}", "c")).toBe(true);
  });

  it("compiles to exactly the regular expression it documents", () => {
    expect(globToRegExp("{a,b}").source).toBe("^(?:a|b)$");
    expect(globToRegExp("[ab]").source).toBe("^[\\x{61}\\x{62}]$");
    expect(globToRegExp("[!a]").source).toBe("^[^/\\x{61}]$");
    expect(globToRegExp("[+-1]").source).toBe("^[\\x{2b}-\\x{2e}\\x{30}-\\x{31}]$");
  });

  it("never lets a class match the separator, and keeps escapes and ranges in it", () => {
    expect(matches("a[+-1]b", "a/b")).toBe(false);
    expect(matches("a[+-1]b", "a.b")).toBe(true);
    expect(matches("[\\]]", "]")).toBe(true);
    expect(matches("[]a]", "]")).toBe(true);
    expect(matches("[a-]", "-")).toBe(true);
    expect(matches("[z-a]", "m")).toBe(false);
    expect(matches("[é-ü]", "ö")).toBe(true);
  });
});

describe("splitGlobBase and maxGlobDepth", () => {
  it("splits off the literal directory", () => {
    expect(splitGlobBase("src/lib/**/*.ts")).toEqual({ base: "src/lib", rest: "**/*.ts" });
    expect(splitGlobBase("*.ts")).toEqual({ base: "", rest: "*.ts" });
    expect(splitGlobBase("/abs/dir/*.md")).toEqual({ base: "/abs/dir", rest: "*.md" });
    expect(splitGlobBase("/*.md")).toEqual({ base: "/", rest: "*.md" });
    expect(splitGlobBase("../x/{a,b}/c")).toEqual({ base: "../x", rest: "{a,b}/c" });
    expect(splitGlobBase("plain/file.txt")).toEqual({ base: "plain/file.txt", rest: "" });
  });

  it("bounds the depth unless ** is used", () => {
    expect(maxGlobDepth("*.ts")).toBe(1);
    expect(maxGlobDepth("*/index.ts")).toBe(2);
    expect(maxGlobDepth("{a,b/c}/*.ts")).toBe(3);
    expect(maxGlobDepth("**/*.ts")).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("output caps", () => {
  it("keeps short text and cuts long text at a character boundary with a marker", () => {
    expect(capOutput("short", 100)).toBe("short");
    const capped = capOutput("é".repeat(100), 11, "narrow it");
    expect(capped).toBe(`${"é".repeat(5)}\n[output truncated: 190 of 200 bytes cut; narrow it]`);
  });

  it("keeps the head and the tail of a long stream, cut at line ends, counting what was cut", () => {
    const buffer = new HeadTailBuffer(20);
    for (let i = 0; i < 100; i++) buffer.push(Buffer.from(`${String(i).padStart(2, "0")}\n`));
    const text = buffer.toString();
    expect(buffer.totalBytes).toBe(300);
    expect(text).toBe("00\n01\n02\n[output truncated: 282 of 300 bytes cut]\n97\n98\n99\n");
  });

  it("never splits a multi-byte character in the head or the tail", () => {
    const buffer = new HeadTailBuffer(9);
    buffer.push(Buffer.from("€".repeat(10)));
    const text = buffer.toString();
    expect(text).not.toContain("\uFFFD");
    expect(text.startsWith("€\n[output truncated:")).toBe(true);
    expect(text.endsWith("]\n€")).toBe(true);
  });
});
