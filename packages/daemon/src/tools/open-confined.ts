// Opening a file that confinement approved, so that what is opened is what was checked. The check
// (`confine`) resolves a path by name; opening the name again follows whatever is there by then, and
// runs that share a workspace run concurrently: one run's Bash can swap a checked file or directory
// for a symlink to anything outside while another run's Read, Grep, Write or Edit opens it. Node has
// no openat, so the descriptor is checked instead: the last component is opened with O_NOFOLLOW, and
// the kernel's own name for the opened file (/proc/self/fd/N) must be the path that was checked.
// Writes, which create files and directories, walk down from the workspace's root one directory
// descriptor at a time (`/proc/self/fd/N/name` is looked up in the directory N is), so nothing is
// created outside before a check could see it.
import { constants, type Stats } from "node:fs";
import { type FileHandle, mkdir, open, readlink } from "node:fs/promises";
import { errnoCode, type ToolRun } from "./context.js";

/** The kernel's name for each of the process's descriptors. */
const PROC_FD = "/proc/self/fd";

// O_NONBLOCK: opening a FIFO otherwise waits for its other end in a libuv thread-pool thread no
// abort reaches. O_NOCTTY: a terminal device never becomes the daemon's. O_NOFOLLOW: a symlink in
// the last component is one that appeared after the check, which resolved them all.
const COMMON_FLAGS = constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A confined file opened, or why it was not. `changed`: the path was swapped after the check. */
export type OpenedFile =
  | { ok: true; handle: FileHandle; info: Stats }
  | { ok: false; problem: "directory" | "special" | "hidden" | "changed" };

/** What a tool tells the model for a problem of {@link OpenedFile} other than a directory. */
export function openProblemText(path: string, problem: "special" | "hidden" | "changed"): string {
  switch (problem) {
    case "special":
      return `${path} is not a regular file (a FIFO, socket or device); the file tools work on files only.`;
    case "hidden":
      return `Path refused: ${path} is one of the daemon's credential files; no tool may read or change it.`;
    case "changed":
      return `${path} changed while it was being opened (it became a symlink, or a directory on its way did): nothing was read or written. Try again.`;
  }
}

/**
 * Opens the confined, physical `path` for reading. Throws the open's error (`ENOENT`, …) when it
 * failed for another reason than a swap.
 */
export async function openConfinedForRead(run: ToolRun, path: string): Promise<OpenedFile> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | COMMON_FLAGS);
  } catch (error) {
    if (errnoCode(error) === "ELOOP") return { ok: false, problem: "changed" };
    if (errnoCode(error) === "ENXIO") return { ok: false, problem: "special" };
    throw error;
  }
  return checked(run, handle, path);
}

/**
 * Opens the confined, physical `path` (below the physical workspace `root`) for writing, creating
 * it and its missing directories. Throws the open's error when it failed for another reason than a
 * swap.
 */
export async function openConfinedForWrite(run: ToolRun, root: string, path: string): Promise<OpenedFile> {
  if (!path.startsWith(`${root}/`)) return { ok: false, problem: path === root ? "directory" : "changed" };
  const parts = path.slice(root.length + 1).split("/");
  const last = parts.pop()!;
  let dir: FileHandle;
  try {
    dir = await open(root, DIRECTORY_FLAGS);
  } catch (error) {
    if (errnoCode(error) === "ELOOP") return { ok: false, problem: "changed" };
    throw error;
  }
  try {
    if ((await locationOf(dir)) !== root) return { ok: false, problem: "changed" };
    for (const part of parts) {
      const inside = `${PROC_FD}/${dir.fd}/${part}`;
      let next: FileHandle;
      try {
        next = await open(inside, DIRECTORY_FLAGS);
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") throw error;
        await mkdir(inside).catch((mkdirError: unknown) => {
          if (errnoCode(mkdirError) !== "EEXIST") throw mkdirError;
        });
        next = await open(inside, DIRECTORY_FLAGS);
      }
      await dir.close();
      dir = next;
    }
    const handle = await open(
      `${PROC_FD}/${dir.fd}/${last}`,
      constants.O_WRONLY | constants.O_CREAT | COMMON_FLAGS,
      0o666,
    );
    return await checked(run, handle, path);
  } catch (error) {
    // ELOOP: a component is now a symlink; ENOTDIR: a directory on the way is now something else.
    const code = errnoCode(error);
    if (code === "ELOOP" || code === "ENOTDIR") return { ok: false, problem: "changed" };
    if (code === "EISDIR") return { ok: false, problem: "directory" };
    if (code === "ENXIO") return { ok: false, problem: "special" };
    throw error;
  } finally {
    await dir.close();
  }
}

/** Keeps `handle` only if it is a regular file, not a credential file, and the file at `path`. */
async function checked(run: ToolRun, handle: FileHandle, path: string): Promise<OpenedFile> {
  try {
    const info = await handle.stat();
    // By device and inode, on the descriptor: any path to the file, however it was reached.
    if (run.hidden?.has(info) === true) return refuse(handle, "hidden");
    if ((await locationOf(handle)) !== path) return refuse(handle, "changed");
    if (info.isDirectory()) return refuse(handle, "directory");
    if (!info.isFile()) return refuse(handle, "special");
    return { ok: true, handle, info };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

async function refuse(handle: FileHandle, problem: "directory" | "special" | "hidden" | "changed") {
  await handle.close();
  return { ok: false as const, problem };
}

/** Where the file open at `handle` is, by the kernel's word (with ` (deleted)` once it is unlinked). */
function locationOf(handle: FileHandle): Promise<string> {
  return readlink(`${PROC_FD}/${handle.fd}`);
}

/**
 * The first `size` bytes of an opened file (fewer if it shrank): its size when opened, not whatever
 * another run's command appends while it is read.
 */
export async function readOpenedFile(handle: FileHandle, size: number, signal: AbortSignal): Promise<Buffer> {
  const data = Buffer.alloc(size);
  let filled = 0;
  while (filled < size) {
    signal.throwIfAborted();
    const { bytesRead } = await handle.read(data, filled, size - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return data.subarray(0, filled);
}
