// A group of forks: one id on every run's spec, registry entry and event, so the parent (or the CLI,
// with the same owner key) can stop or abort them as one, queued runs included.
import type { ForkParams } from "@forkd/core";
import type { GroupBudget } from "@forkd/protocol";
import type { FanOutChild, FanOutOptions, NatsForkHandle, NatsForkSubagent } from "./nats-fork-subagent.js";

/**
 * Forks that are controlled together. Made by {@link NatsForkSubagent.group}; every
 * {@link NatsForkSubagent.fanOut} makes one too (its handles carry its `groupId`).
 *
 * @example
 * const group = forks.group();
 * group.fanOut({ prefix, parent: { agent_id: "me" } }, [{ directive: "a" }, { directive: "b" }]);
 * await group.abort("the user pressed Esc");
 */
export class ForkGroup {
  /** The group's id: one NATS token, on every spec, registry entry and event of its runs. */
  readonly id: string;
  readonly #forks: NatsForkSubagent;
  readonly #handles: NatsForkHandle[] = [];

  /** @internal Made by {@link NatsForkSubagent.group}. */
  constructor(forks: NatsForkSubagent, id: string) {
    this.#forks = forks;
    this.id = id;
  }

  /** The handles of the runs forked through this object, in order. */
  get handles(): readonly NatsForkHandle[] {
    return this.#handles;
  }

  /** Forks one child into the group. */
  fork(params: Omit<ForkParams, "groupId">): NatsForkHandle {
    const handle = this.#forks.fork({ ...params, groupId: this.id });
    this.#handles.push(handle);
    return handle;
  }

  /** Fans out into the group (warm-first, see {@link NatsForkSubagent.fanOut}). */
  fanOut(
    base: Omit<ForkParams, "directive" | "forkCall" | "label" | "runId" | "groupId">,
    children: FanOutChild[],
    options: FanOutOptions = {},
  ): NatsForkHandle[] {
    const handles = this.#forks.fanOut({ ...base, groupId: this.id }, children, options);
    this.#handles.push(...handles);
    return handles;
  }

  /** Aborts every run of the group that has not ended, queued ones included; returns their ids. */
  abort(reason = "group aborted by parent"): Promise<string[]> {
    return this.#forks.controlGroup(this.id, { mode: "abort", reason });
  }

  /**
   * Sets or raises the budget shared by the group's runs on every daemon (see
   * {@link NatsForkSubagent.setGroupBudget}): at the cap they pause; a raised cap resumes them.
   */
  setBudget(cap: GroupBudget["cap"]): Promise<GroupBudget> {
    return this.#forks.setGroupBudget(this.id, cap);
  }

  /** Stops every run of the group gracefully (see {@link NatsForkHandle.stop}); returns their ids. */
  stop(reason = "group stopped by parent"): Promise<string[]> {
    return this.#forks.controlGroup(this.id, { mode: "stop", reason });
  }
}
