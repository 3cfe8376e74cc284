// The tools of one run: built-ins confined to the workspace (or the run's own worktree), and any
// other tool routed to the parent's tool host over NATS.

import type { ForkSubjects } from "@forkd/protocol";
import type { NatsConnection } from "@nats-io/transport-node";
import { type DaemonConfig, DaemonConfigError } from "./config.js";
import { secretFilesOf } from "./config-secrets.js";
import { type RunTools, type RunToolsFactory, runCwd } from "./fork-run.js";
import type { DaemonLogger } from "./logger.js";
import { toolHostDispatcher } from "./remote-tools.js";
import { createBuiltinToolDispatcher } from "./tools/dispatcher.js";
import { probeSandbox, type Sandbox } from "./tools/sandbox.js";
import { daemonSecrets, type NamedSecret } from "./tools/secrets.js";
import { createRunWorktree } from "./tools/worktree.js";

/**
 * The sandbox the configuration asks for. With Bash on and `tools.sandbox: "bwrap"`, a machine that
 * cannot run bubblewrap is a configuration error: the daemon must not run a model's commands
 * unconfined unless the operator said so (`tools.sandbox: "off"`, which is logged as a warning).
 * @throws {@link DaemonConfigError} naming why bubblewrap cannot run and how to proceed.
 */
export function requireSandbox(
  config: DaemonConfig,
  logger: DaemonLogger,
  probe: () => Sandbox | string = probeSandbox,
): Sandbox | undefined {
  if (config.tools.bash === "off") return undefined;
  if (config.tools.sandbox === "off") {
    logger.warn(
      { bash: config.tools.bash },
      "Bash runs WITHOUT a sandbox (tools.sandbox: off): a model's commands can reach the network and the daemon's files",
    );
    return undefined;
  }
  const sandbox = probe();
  if (typeof sandbox === "string") {
    throw new DaemonConfigError(
      `Bash (policy ${config.tools.bash}) needs its sandbox, and ${sandbox}. Install bubblewrap ` +
        "(apt-get install bubblewrap), or turn Bash off (FORKD_BASH_POLICY=off), or run it unsandboxed " +
        "on purpose (FORKD_BASH_SANDBOX=off; never with untrusted models).",
    );
  }
  return { ...sandbox, hidden: secretFilesOf(config) };
}

/** The default {@link RunToolsFactory} of a daemon. */
export function daemonRunTools(options: {
  config: DaemonConfig;
  nc: NatsConnection;
  subjects: ForkSubjects;
  logger: DaemonLogger;
  /** Where Bash runs (see {@link requireSandbox}); absent when the sandbox is off. */
  sandbox?: Sandbox | undefined;
}): RunToolsFactory {
  const { config, nc, subjects, logger, sandbox } = options;
  // Read once, at the first run (registerDaemonSecrets has run by then): every variable of the
  // environment is read to find them, which a dispatch should not pay each time.
  let secrets: readonly NamedSecret[] | undefined;
  return async ({ spec, signal }): Promise<RunTools> => {
    secrets ??= daemonSecrets();
    const fallback = toolHostDispatcher(nc, subjects, spec.tool_host, {
      outputCapBytes: config.tools.outputCapBytes,
    });
    const base = {
      bashPolicy: config.tools.bash,
      bashTimeoutMs: config.tools.bashTimeoutMs,
      outputCapBytes: config.tools.outputCapBytes,
      fallback,
      logger,
      sandbox,
      secrets,
      hiddenFiles: secretFilesOf(config),
    };
    if (!spec.isolation.worktree) {
      const cwd = runCwd(config.workspace, spec.isolation.cwd);
      return { cwd, dispatcher: createBuiltinToolDispatcher({ ...base, workspace: config.workspace }) };
    }
    const worktree = await createRunWorktree({
      repoDir: config.workspace,
      runId: spec.run_id,
      baseRef: spec.isolation.base_ref,
      signal,
    });
    const cwd = runCwd(worktree.path, spec.isolation.cwd);
    return {
      cwd,
      dispatcher: createBuiltinToolDispatcher({
        ...base,
        workspace: worktree.path,
        // git in a worktree reads and writes the repository's git directory too; not the shared
        // checkout, whose files (the parent's uncommitted work among them) are no run's to change.
        sandboxVisible: [worktree.commonDir],
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
