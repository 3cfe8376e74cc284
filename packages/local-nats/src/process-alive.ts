// Whether a process exists, for asserting that servers are really gone.

/**
 * Whether a process with this pid exists (signal 0). A process owned by another user counts as
 * alive; a zombie (exited, not yet reaped by its parent) also counts as alive until it is reaped.
 *
 * @param pid - the process id.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
