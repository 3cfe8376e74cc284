import { describe, expect, it } from "vitest";
import type { StoredPrefixRef } from "./prefix-encoding.js";
import { PrefixUploads } from "./prefix-uploads.js";

const STALE_AFTER_MS = 1_000;

/** Uploads whose outcome each test decides, on a clock it moves. */
function setUp(maxRemembered?: number) {
  const started: { hash: string; resolve: () => void; reject: (error: Error) => void }[] = [];
  const failures: string[] = [];
  let clock = 0;
  const uploads = new PrefixUploads(
    (_bytes, ref) =>
      new Promise<void>((resolve, reject) => {
        started.push({ hash: ref.hash, resolve, reject });
      }),
    {
      staleAfterMs: STALE_AFTER_MS,
      now: () => clock,
      onBackgroundError: (_error, ref) => failures.push(ref.hash),
      ...(maxRemembered === undefined ? {} : { maxRemembered }),
    },
  );
  return {
    uploads,
    started,
    failures,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

const bytes = new Uint8Array([1, 2, 3]);
const refOf = (hash: string): StoredPrefixRef => ({ hash, size: bytes.byteLength });
/** Lets settled uploads' callbacks run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("small prefixes: inline until forked again and stored", () => {
  it("uploads nothing for a prefix forked once", () => {
    const { uploads, started } = setUp();
    expect(uploads.storedForReuse(bytes, refOf("a"))).toBe(false);
    expect(started).toHaveLength(0);
  });

  it("uploads at the second fork, stays inline while it is in flight, and refers to it once stored", async () => {
    const { uploads, started } = setUp();
    const ref = refOf("a");
    uploads.storedForReuse(bytes, ref);
    expect(uploads.storedForReuse(bytes, ref)).toBe(false);
    expect(started.map((upload) => upload.hash)).toEqual(["a"]);
    expect(uploads.storedForReuse(bytes, ref)).toBe(false);
    expect(started).toHaveLength(1);
    started[0]!.resolve();
    await settle();
    expect(uploads.storedForReuse(bytes, ref)).toBe(true);
    expect(started).toHaveLength(1);
  });

  it("relies on an upload exactly as old as the limit, and uploads again, inline meanwhile, one millisecond later", async () => {
    const { uploads, started, advance } = setUp();
    const ref = refOf("a");
    uploads.storedForReuse(bytes, ref);
    uploads.storedForReuse(bytes, ref);
    started[0]!.resolve();
    await settle();
    advance(STALE_AFTER_MS);
    expect(uploads.storedForReuse(bytes, ref)).toBe(true);
    advance(1);
    expect(uploads.storedForReuse(bytes, ref)).toBe(false);
    expect(started).toHaveLength(2);
    started[1]!.resolve();
    await settle();
    expect(uploads.storedForReuse(bytes, ref)).toBe(true);
  });

  it("reports a failed background upload and forgets it: the prefix is learnt again", async () => {
    const { uploads, started, failures } = setUp();
    const ref = refOf("a");
    uploads.storedForReuse(bytes, ref);
    uploads.storedForReuse(bytes, ref);
    started[0]!.reject(new Error("object store unavailable"));
    await settle();
    expect(failures).toEqual(["a"]);
    expect(uploads.storedForReuse(bytes, ref)).toBe(false);
    expect(started).toHaveLength(1);
    expect(uploads.storedForReuse(bytes, ref)).toBe(false);
    expect(started).toHaveLength(2);
  });

  it("remembers the newest prefixes seen once up to its bound", () => {
    const { uploads, started } = setUp(2);
    for (const hash of ["x", "y"]) uploads.storedForReuse(bytes, refOf(hash));
    // Exactly at the bound both are kept: "x" is forked again.
    uploads.storedForReuse(bytes, refOf("x"));
    expect(started.map((upload) => upload.hash)).toEqual(["x"]);
    started.length = 0;
    for (const hash of ["a", "b", "c"]) uploads.storedForReuse(bytes, refOf(hash));
    // "a" was forgotten when "c" came: its second fork counts as a first.
    uploads.storedForReuse(bytes, refOf("a"));
    expect(started).toHaveLength(0);
    uploads.storedForReuse(bytes, refOf("c"));
    expect(started.map((upload) => upload.hash)).toEqual(["c"]);
  });
});

describe("prefixes by reference", () => {
  it("uploads once: forks wait for the upload in flight, not for a stored one, until it is stale", async () => {
    const { uploads, started, advance } = setUp();
    const ref = refOf("a");
    const first = uploads.forReference(bytes, ref);
    expect(first).toBeInstanceOf(Promise);
    expect(uploads.forReference(bytes, ref)).toBe(first);
    started[0]!.resolve();
    await first;
    expect(uploads.forReference(bytes, ref)).toBeUndefined();
    advance(STALE_AFTER_MS);
    expect(uploads.forReference(bytes, ref)).toBeUndefined();
    advance(1);
    const again = uploads.forReference(bytes, ref);
    expect(again).toBeInstanceOf(Promise);
    expect(again).not.toBe(first);
    expect(started).toHaveLength(2);
  });

  it("uploads again after a failure", async () => {
    const { uploads, started } = setUp();
    const ref = refOf("a");
    const failed = uploads.forReference(bytes, ref);
    started[0]!.reject(new Error("object store unavailable"));
    await expect(failed).rejects.toThrow("object store unavailable");
    await settle();
    uploads.forReference(bytes, ref);
    expect(started).toHaveLength(2);
  });

  it("remembers the newest uploads up to its bound", async () => {
    const { uploads, started, advance } = setUp(2);
    for (const hash of ["a", "b"]) uploads.forReference(bytes, refOf(hash));
    // Exactly at the bound both are kept.
    uploads.forReference(bytes, refOf("a"));
    expect(started).toHaveLength(2);
    uploads.forReference(bytes, refOf("c"));
    uploads.forReference(bytes, refOf("c"));
    expect(started).toHaveLength(3);
    uploads.forReference(bytes, refOf("a"));
    expect(started.map((upload) => upload.hash)).toEqual(["a", "b", "c", "a"]);
    // An upload made again (stale) becomes the newest: "a", not the again-made "c", is forgotten next.
    advance(STALE_AFTER_MS + 1);
    uploads.forReference(bytes, refOf("c"));
    uploads.forReference(bytes, refOf("d"));
    started.length = 0;
    uploads.forReference(bytes, refOf("c"));
    expect(started).toHaveLength(0);
  });

  it("counts a small prefix's stored upload for a fork by reference", async () => {
    const { uploads, started } = setUp();
    const ref = refOf("a");
    uploads.storedForReuse(bytes, ref);
    uploads.storedForReuse(bytes, ref);
    started[0]!.resolve();
    await settle();
    expect(uploads.forReference(bytes, ref)).toBeUndefined();
    expect(started).toHaveLength(1);
  });
});
