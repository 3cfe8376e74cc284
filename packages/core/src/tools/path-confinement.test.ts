import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConfinedPathResult, resolveConfinedPath } from "./path-confinement.js";

// One real tree for every case:
//   base/mem/                      the root
//   base/mem/notes.md
//   base/mem/sub/
//   base/mem/a/b/c/
//   base/mem/to-outside   -> base/outside          (directory symlink escaping)
//   base/mem/secret-link  -> base/outside/secret.txt (file symlink escaping)
//   base/mem/dangling     -> base/outside/not-yet   (dangling symlink escaping)
//   base/mem/to-sub       -> sub                    (relative symlink staying inside)
//   base/mem/deep         -> base/mem/a/b/c
//   base/mem/loop1 -> loop2, loop2 -> loop1, self -> self
//   base/outside/secret.txt
//   base/mem-link         -> base/mem               (a root that is a symlink)
let base: string;
let mem: string;
let outside: string;

beforeAll(async () => {
  // realpath: the temp dir may itself be behind a symlink (macOS /tmp).
  base = await realpath(await mkdtemp(join(tmpdir(), "forkd-confine-")));
  mem = join(base, "mem");
  outside = join(base, "outside");
  await mkdir(join(mem, "sub"), { recursive: true });
  await mkdir(join(mem, "a", "b", "c"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(mem, "notes.md"), "notes");
  await writeFile(join(outside, "secret.txt"), "secret");
  await symlink(outside, join(mem, "to-outside"));
  await symlink(join(outside, "secret.txt"), join(mem, "secret-link"));
  await symlink(join(outside, "not-yet"), join(mem, "dangling"));
  await symlink("sub", join(mem, "to-sub"));
  await symlink(join(mem, "a", "b", "c"), join(mem, "deep"));
  await symlink("loop2", join(mem, "loop1"));
  await symlink("loop1", join(mem, "loop2"));
  await symlink("self", join(mem, "self"));
  await symlink(mem, join(base, "mem-link"));
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

function expectInside(result: ConfinedPathResult, path: string): void {
  expect(result, JSON.stringify(result)).toMatchObject({ ok: true, path });
}

function expectRefused(result: ConfinedPathResult, code: string): void {
  expect(result.ok, JSON.stringify(result)).toBe(false);
  if (!result.ok) {
    expect(result.code).toBe(code);
    expect(result.reason.length).toBeGreaterThan(0);
  }
}

describe("resolveConfinedPath", () => {
  it("accepts absolute and relative paths inside the root, and the root itself", async () => {
    expectInside(await resolveConfinedPath(mem, join(mem, "notes.md"), base), join(mem, "notes.md"));
    expectInside(await resolveConfinedPath(mem, "notes.md", mem), join(mem, "notes.md"));
    expectInside(await resolveConfinedPath(mem, "mem/sub/x.md", base), join(mem, "sub", "x.md"));
    expectInside(await resolveConfinedPath(mem, "./sub/./y.md", mem), join(mem, "sub", "y.md"));
    expectInside(await resolveConfinedPath(mem, mem, base), mem);
  });

  it("resolves a relative root against cwd", async () => {
    expectInside(await resolveConfinedPath("mem", "mem/notes.md", base), join(mem, "notes.md"));
    expectRefused(await resolveConfinedPath("mem", "outside/x", base), "outside_root");
  });

  it("refuses .. escapes, absolute and relative", async () => {
    expectRefused(await resolveConfinedPath(mem, join(mem, "..", "outside", "x"), base), "outside_root");
    expectRefused(await resolveConfinedPath(mem, "../outside/x", mem), "outside_root");
    expectRefused(await resolveConfinedPath(mem, "sub/../../outside/x", mem), "outside_root");
    expectRefused(await resolveConfinedPath(mem, "../mem-sibling/x", mem), "outside_root");
    expectInside(await resolveConfinedPath(mem, "sub/../a/x", mem), join(mem, "a", "x"));
  });

  it("does not mistake a sibling with the root as prefix for the inside", async () => {
    expectRefused(await resolveConfinedPath(mem, `${mem}-other/x`, base), "outside_root");
  });

  it("accepts missing parents inside the root and refuses them outside", async () => {
    expectInside(await resolveConfinedPath(mem, "new/dir/file.md", mem), join(mem, "new", "dir", "file.md"));
    expectInside(await resolveConfinedPath(mem, "new/../also-new.md", mem), join(mem, "also-new.md"));
    expectRefused(await resolveConfinedPath(mem, join(outside, "new", "dir", "x"), mem), "outside_root");
    expectRefused(await resolveConfinedPath(mem, "/nonexistent-forkd-root/a/b", mem), "outside_root");
    // `..` out of a directory that does not exist yet lands in its real parent.
    expectRefused(await resolveConfinedPath(mem, "new/../../outside/x", mem), "outside_root");
  });

  it("refuses a symlinked directory inside the root that points outside", async () => {
    expectRefused(await resolveConfinedPath(mem, "to-outside/x.md", mem), "outside_root");
    expectRefused(await resolveConfinedPath(mem, "to-outside/new/dir/x.md", mem), "outside_root");
    expectRefused(await resolveConfinedPath(mem, "to-outside", mem), "outside_root");
  });

  it("refuses a symlinked file and a dangling symlink that point outside", async () => {
    expectRefused(await resolveConfinedPath(mem, "secret-link", mem), "outside_root");
    const dangling = await resolveConfinedPath(mem, "dangling", mem);
    expectRefused(dangling, "outside_root");
    expect(dangling.ok ? "" : dangling.reason).toContain(join(outside, "not-yet"));
  });

  it("follows symlinks that stay inside and returns the physical path", async () => {
    expectInside(await resolveConfinedPath(mem, "to-sub/x.md", mem), join(mem, "sub", "x.md"));
    expectInside(await resolveConfinedPath(mem, "deep/x.md", mem), join(mem, "a", "b", "c", "x.md"));
  });

  it("applies .. after a symlink to the symlink's target, as the kernel does", async () => {
    // deep -> a/b/c, so deep/.. is a/b: inside.
    expectInside(await resolveConfinedPath(mem, "deep/../x.md", mem), join(mem, "a", "b", "x.md"));
    // to-outside/../x is base/x for the kernel, mem/x lexically: refused.
    expectRefused(await resolveConfinedPath(mem, "to-outside/../x.md", mem), "outside_root");
    // deep/../../../x is mem/x for the kernel but base/x after lexical normalisation: refused too,
    // because an executor that normalises first would write base/x.
    expectRefused(await resolveConfinedPath(mem, "deep/../../../x.md", mem), "outside_root");
  });

  it("works when the root is a symlink", async () => {
    const root = join(base, "mem-link");
    expectInside(await resolveConfinedPath(root, join(root, "notes.md"), base), join(mem, "notes.md"));
    expectInside(await resolveConfinedPath(root, join(mem, "notes.md"), base), join(mem, "notes.md"));
    expectInside(await resolveConfinedPath(root, "new.md", root), join(mem, "new.md"));
    expectRefused(await resolveConfinedPath(root, join(root, "to-outside", "x"), base), "outside_root");
    expectRefused(await resolveConfinedPath(root, join(outside, "x"), base), "outside_root");
  });

  it("works when the root does not exist yet", async () => {
    const root = join(base, "later");
    expectInside(await resolveConfinedPath(root, join(root, "a", "b.md"), base), join(root, "a", "b.md"));
    expectRefused(await resolveConfinedPath(root, join(mem, "x"), base), "outside_root");
  });

  it("refuses symlink loops", async () => {
    expectRefused(await resolveConfinedPath(mem, "loop1/x", mem), "symlink_loop");
    expectRefused(await resolveConfinedPath(mem, "self", mem), "symlink_loop");
    expectRefused(await resolveConfinedPath(mem, "to-sub/x", mem, { maxSymlinks: 0 }), "symlink_loop");
  });

  it("refuses invalid paths", async () => {
    expectRefused(await resolveConfinedPath(mem, "", mem), "invalid_path");
    expectRefused(await resolveConfinedPath(mem, "a\0b", mem), "invalid_path");
    expectRefused(await resolveConfinedPath(mem, "x", "relative/cwd"), "invalid_path");
    expectRefused(await resolveConfinedPath(mem, "notes.md/x", mem), "invalid_path");
  });

  it("refuses what is not a string, naming which input", async () => {
    const refusedAs = async (root: unknown, candidate: unknown, cwd: unknown, reason: string) => {
      const result = await resolveConfinedPath(root as string, candidate as string, cwd as string);
      expect(result).toEqual({ ok: false, code: "invalid_path", reason });
    };
    await refusedAs(mem, 5, mem, "the path is empty");
    await refusedAs(undefined, "x", mem, "the root is empty");
    await refusedAs(mem, "x", "", "the cwd is empty");
    await refusedAs(mem, "x", `${mem}\0`, "the cwd contains a NUL byte");
  });

  it("says when the root itself cannot be resolved", async () => {
    const result = await resolveConfinedPath(join(mem, "notes.md", "root"), "x", mem);
    expect(result).toEqual({
      ok: false,
      code: "invalid_path",
      reason: `the root ${join(mem, "notes.md", "root")}: ${join(mem, "notes.md")} is not a directory`,
    });
  });

  it("refuses a path that resolves as written but not once normalised", async () => {
    // deep/.. is a/b for the kernel, where notes.md does not exist; normalised, notes.md is a file.
    expect(await resolveConfinedPath(mem, "deep/../notes.md/x", mem)).toEqual({
      ok: false,
      code: "invalid_path",
      reason: `${join(mem, "notes.md")} is not a directory`,
    });
  });

  it("reports a component the kernel refuses to look up as unreadable, not as missing", async () => {
    const long = "n".repeat(300);
    const result = await resolveConfinedPath(mem, `${long}/x`, mem);
    expect(result).toEqual({
      ok: false,
      code: "unreadable",
      reason: `cannot inspect ${join(mem, long)} (ENAMETOOLONG)`,
    });
  });

  it("follows exactly maxSymlinks symlinks, and refuses one more", async () => {
    // to-sub/x follows one symlink: within a limit of 1, over a limit of 0.
    expectInside(await resolveConfinedPath(mem, "to-sub/x", mem, { maxSymlinks: 1 }), join(mem, "sub", "x"));
    const refused = await resolveConfinedPath(mem, "to-sub/x", mem, { maxSymlinks: 0 });
    expect(refused).toEqual({
      ok: false,
      code: "symlink_loop",
      reason: `too many symlinks (a loop?) resolving ${join(mem, "to-sub", "x")}`,
    });
  });

  it("names where an outside path resolves to, when that differs from what was written", async () => {
    const direct = await resolveConfinedPath(mem, join(outside, "x"), mem);
    expect(direct.ok ? "" : direct.reason).toBe(`${join(outside, "x")} is outside ${mem}`);
    const linked = await resolveConfinedPath(mem, "to-outside/x", mem);
    expect(linked.ok ? "" : linked.reason).toBe(
      `to-outside/x is outside ${mem} (it resolves to ${join(outside, "x")})`,
    );
  });

  it("treats / as a root that contains everything", async () => {
    expectInside(await resolveConfinedPath("/", join(mem, "notes.md"), base), join(mem, "notes.md"));
  });

  it("stops when the signal aborts", async () => {
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await expect(resolveConfinedPath(mem, "x", mem, { signal: controller.signal })).rejects.toThrow("stop");
  });
});
