// The tools of one run: built-ins confined to the workspace (or the run's own worktree), and any
// other tool routed to the parent's tool host over NATS.

import type { ForkSubjects } from "@forkd/protocol";
import type { NatsConnection } from "@nats-io/transport-node";
import type { DaemonConfig } from "./config.js";
import { type RunTools, type RunToolsFactory, runCwd } from "./fork-run.js";
import type { DaemonLogger } from "./logger.js";
import { toolHostDispatcher } from "./remote-tools.js";
import { createBuiltinToolDispatcher } from "./tools/dispatcher.js";
import { createRunWorktree } from "./tools/worktree.js";

/** The default {@link RunToolsFactory} of a daemon. */
export function daemonRunTools(options: {
  config: DaemonConfig;
  nc: NatsConnection;
  subjects: ForkSubjects;
  logger: DaemonLogger;
}): RunToolsFactory {
  const { config, nc, subjects, logger } = options;
  return async ({ spec, signal }): Promise<RunTools> => {
    const fallback = toolHostDispatcher(nc, subjects, spec.tool_host, {
      outputCapBytes: config.tools.outputCapBytes,
    });
    const base = {
      bashPolicy: config.tools.bash,
      bashTimeoutMs: config.tools.bashTimeoutMs,
      outputCapBytes: config.tools.outputCapBytes,
      fallback,
      logger,
    };
    if (!spec.isolation.worktree) {
      const cwd = runCwd(config.workspace, spec.isolation.cwd);
      return { cwd, dispatcher: createBuiltinToolDispatcher({ ...base, workspace: config.workspace }) };
    }
    const worktree = await createRunWorktree({
      repoDir: config.workspace,
      runId: spec.run_id,
      ...(spec.isolation.base_ref === undefined ? {} : { baseRef: spec.isolation.base_ref }),
      signal,
    });
    const cwd = runCwd(worktree.path, spec.isolation.cwd);
    return {
      cwd,
      dispatcher: createBuiltinToolDispatcher({
        ...base,
        workspace: worktree.path,
        pathAliases: [worktree.pathAlias],
      }),
      worktree: {
        mapping: worktree.mapping(config.workspace, spec.isolation.cwd),
        commit: (message) => worktree.commitChanges(message),
        dispose: () => worktree.remove(),
      },
    };
  };
}
