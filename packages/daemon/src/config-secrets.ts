// The secrets a daemon's configuration holds outside its environment: the scrubber must know them to
// keep them out of events, and the sandbox must hide the files they come from.
import { readFileSync } from "node:fs";
import type { DaemonConfig } from "./config.js";
import type { NamedSecret } from "./tools/secrets.js";

/** The files of the configuration that hold credentials: the sandbox hides them from commands. */
export function secretFilesOf(config: DaemonConfig): string[] {
  const { nats } = config;
  return [nats.passFile, nats.nkeySeedFile, nats.credsFile, nats.tls?.keyFile].filter(
    (file): file is string => file !== undefined,
  );
}

/**
 * The secret values of the configuration: passwords and tokens given in a file or a flag, the
 * contents of the password, NKey seed, creds and TLS key files (each token line of them: a password,
 * a seed, a JWT, a line of a PEM key), and the password of any URL. A file that cannot be read holds nothing
 * here: connecting reports that problem.
 */
export function secretsOfConfig(config: DaemonConfig): NamedSecret[] {
  const secrets: NamedSecret[] = [];
  const add = (name: string, value: string | undefined) => {
    const trimmed = value?.trim();
    if (trimmed !== undefined && trimmed !== "") secrets.push({ name, value: trimmed });
  };
  const { nats } = config;
  add("nats.pass", nats.pass);
  add("nats.token", nats.token);
  add("llm.apiKey", config.llm.apiKey);
  add("llm.openaiApiKey", config.llm.openaiApiKey);
  add("llm.geminiApiKey", config.llm.geminiApiKey);
  for (const [name, file] of [
    ["nats.passFile", nats.passFile],
    ["nats.nkeySeedFile", nats.nkeySeedFile],
    ["nats.credsFile", nats.credsFile],
    ["nats.tls.keyFile", nats.tls?.keyFile],
  ] as const) {
    if (file === undefined) continue;
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    const lines = text.split(/\r?\n/);
    // The password is the file's first line, spaces and all (as the connection reads it).
    if (name === "nats.passFile") add(name, lines[0]);
    // Token lines only: a creds file's banners and advice are prose, not secrets.
    else for (const line of lines) if (/^[^\s*-]\S*$/.test(line.trim())) add(name, line);
  }
  for (const url of [...nats.servers, config.llm.baseURL ?? ""]) add("url password", urlPassword(url));
  return secrets;
}

function urlPassword(text: string): string | undefined {
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/@:\s]*:([^/@\s]+)@/i.exec(text);
  if (match === null) return undefined;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return match[1];
  }
}
