// How git is run so that it runs nothing a model planted: by the model's commands (Bash) and by the
// daemon itself (a worktree run's commit, outside the sandbox, after the model had the worktree).

/**
 * Command-scope configuration (it outranks every config file, the repository's included): no
 * file-system monitor, no hooks, no pager, no bare repository found by walking up (a model could
 * write one, config included, anywhere in the workspace).
 */
export const GIT_COMMAND_SCOPE_OVERRIDES: Readonly<Record<string, string>> = {
  GIT_CONFIG_COUNT: "4",
  GIT_CONFIG_KEY_0: "core.fsmonitor",
  GIT_CONFIG_VALUE_0: "false",
  GIT_CONFIG_KEY_1: "core.pager",
  GIT_CONFIG_VALUE_1: "cat",
  GIT_CONFIG_KEY_2: "core.hooksPath",
  GIT_CONFIG_VALUE_2: "/dev/null",
  GIT_CONFIG_KEY_3: "safe.bareRepository",
  GIT_CONFIG_VALUE_3: "explicit",
};

/**
 * git's environment for a model's commands, under every policy: the overrides above, and no system
 * or global config (unsandboxed, HOME is the daemon's) and no system attributes. Write and Edit
 * refuse `.git/`, and the sandbox mounts `.git`'s config, hooks and info read-only under every
 * policy, so a repository's own config is the parent's.
 */
export const SAFE_GIT_ENV: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_ATTR_NOSYSTEM: "1",
  ...GIT_COMMAND_SCOPE_OVERRIDES,
};
