// The read-only shell classifier (see classify.ts) and its corpora.
export type { ShellClassification } from "./classify.js";
export { classifyShellCommand, splitShellWords } from "./classify.js";
export { READ_ONLY_SHELL_COMMANDS } from "./commands/index.js";
export type { ShellCorpusEntry } from "./corpus.js";
export { SHELL_CORPUS } from "./corpus.js";
export type { HostileShellClass, HostileShellPayload } from "./hostile-corpus.js";
export { HOSTILE_SHELL_CORPUS } from "./hostile-corpus.js";
