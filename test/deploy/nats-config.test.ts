// Every NATS configuration under deploy/ is one nats-server accepts (`nats-server -t`), with the
// password variables it references set and not without them; the cluster nodes agree with each other;
// the copy of accounts.conf in the Helm values is the file itself.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { checkNatsConfig, passwordEnv, ROLE_PASSWORD_VARS, readRepoFile, repoPath } from "./support.js";

const CONFIGS = [
  "deploy/nats/single.conf",
  "deploy/nats/cluster/node-1.conf",
  "deploy/nats/cluster/node-2.conf",
  "deploy/nats/cluster/node-3.conf",
];

const tempDirs: string[] = [];
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** `$NAME` references of a nats-server config text (outside comments and quoted strings). */
function variableReferences(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split("\n")) {
    const code = line.replace(/#.*$/, "").replace(/"[^"]*"/g, '""');
    for (const match of code.matchAll(/\$([A-Z][A-Z0-9_]*)/g)) names.add(match[1]!);
  }
  return names;
}

describe("deploy/nats configuration files", () => {
  it.each(CONFIGS)("%s passes `nats-server -t` with the passwords set", (file) => {
    const result = checkNatsConfig(repoPath(file), passwordEnv());
    expect(result.output).toContain("is valid");
    expect(result.ok).toBe(true);
  });

  it.each(Object.values(ROLE_PASSWORD_VARS))("refuses to load without %s (no empty passwords)", (name) => {
    const env = passwordEnv();
    delete env[name];
    const result = checkNatsConfig(repoPath("deploy/nats/single.conf"), env);
    expect(result.ok).toBe(false);
    expect(result.output).toContain(`'${name}'`);
  });

  it("references exactly the documented password variables, and no password literal", () => {
    const accounts = readRepoFile("deploy/nats/accounts.conf");
    const referenced = [...variableReferences(accounts)].filter((name) => !name.endsWith("_PERMISSIONS"));
    expect(referenced.sort()).toEqual(Object.values(ROLE_PASSWORD_VARS).sort());
    for (const line of accounts.split("\n").filter((l) => /password\s*:/.test(l.replace(/#.*$/, "")))) {
      expect(line).toMatch(/password: \$FORKD_[A-Z]+_PASSWORD/);
    }
    for (const name of Object.values(ROLE_PASSWORD_VARS)) expect(accounts).toContain(`#   ${name}`);
  });

  it("gives the three cluster nodes distinct names and the same cluster, routes and accounts", () => {
    const names = [1, 2, 3].map((n) => {
      const text = readRepoFile(`deploy/nats/cluster/node-${n}.conf`);
      expect(text).toMatch(/^include cluster\.conf$/m);
      return /^server_name: (\S+)$/m.exec(text)?.[1];
    });
    expect(names).toEqual(["nats-1", "nats-2", "nats-3"]);
    const shared = readRepoFile("deploy/nats/cluster/cluster.conf");
    for (const name of names) expect(shared).toContain(`nats-route://${name}:6222`);
    expect(shared).toMatch(/^include \.\.\/accounts\.conf$/m);
    expect(readRepoFile("deploy/nats/single.conf")).toMatch(/^include accounts\.conf$/m);
  });

  it("keeps max_payload at or below 8MB in every file", () => {
    for (const file of [...CONFIGS, "deploy/nats/cluster/cluster.conf"]) {
      for (const match of readRepoFile(file).matchAll(/^max_payload: (\d+)(MB|KB)?$/gm)) {
        const bytes = Number(match[1]) * (match[2] === "MB" ? 1 << 20 : match[2] === "KB" ? 1 << 10 : 1);
        expect(bytes).toBeLessThanOrEqual(8 << 20);
      }
    }
  });
});

describe("deploy/k8s/nats-values.yaml", () => {
  const values = parse(readRepoFile("deploy/k8s/nats-values.yaml")) as {
    config: {
      cluster: { enabled: boolean; replicas: number };
      jetstream: { enabled: boolean };
      merge: Record<string, string>;
    };
    configMap: { merge: { data: Record<string, string> } };
    container: { env: Record<string, { valueFrom: { secretKeyRef: { name: string; key: string } } }> };
  };

  it("asks for a three-node JetStream cluster that includes forkd's accounts", () => {
    expect(values.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(values.config.jetstream.enabled).toBe(true);
    expect(values.config.merge["00$include"]).toBe("forkd-accounts.conf");
  });

  it("carries deploy/nats/accounts.conf verbatim", () => {
    expect(values.configMap.merge.data["forkd-accounts.conf"]).toBe(
      readRepoFile("deploy/nats/accounts.conf"),
    );
  });

  it("feeds every password variable from the forkd-nats-passwords Secret", () => {
    const secrets = parse(readRepoFile("deploy/k8s/secret.yaml").split(/^---$/m)[1]!) as {
      metadata: { name: string };
      stringData: Record<string, string>;
    };
    for (const [role, name] of Object.entries(ROLE_PASSWORD_VARS)) {
      expect(values.container.env[name]?.valueFrom.secretKeyRef).toEqual({
        name: secrets.metadata.name,
        key: role,
      });
      expect(secrets.stringData[role]).toBeTypeOf("string");
    }
  });

  it("renders, the way the chart does, to a configuration nats-server accepts", async () => {
    // The chart writes its config as JSON, with `$include` keys turned into include directives and
    // `<< … >>` strings unquoted (see the chart's README); mirror that for the parts that matter.
    const dir = await mkdtemp(join(tmpdir(), "forkd-helm-"));
    tempDirs.push(dir);
    await writeFile(join(dir, "forkd-accounts.conf"), values.configMap.merge.data["forkd-accounts.conf"]!);
    const merged = Object.entries(values.config.merge)
      .filter(([key]) => !key.endsWith("$include"))
      .map(([key, value]) => `  ${JSON.stringify(key)}: ${String(value).replace(/^<< (.*) >>$/, "$1")},`);
    const conf = [
      "{",
      "  include forkd-accounts.conf;",
      '  "server_name": "nats-0",',
      '  "lame_duck_grace_period": "10s",',
      '  "lame_duck_duration": "30s",',
      '  "port": 4222,',
      '  "http_port": 8222,',
      '  "cluster": { "name": "nats", "port": 6222, "no_advertise": true,',
      '    "routes": ["nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://nats-2.nats-headless:6222"] },',
      `  "jetstream": { "store_dir": ${JSON.stringify(dir)}, "max_file_store": 20GB },`,
      ...merged,
      "}",
      "",
    ].join("\n");
    await writeFile(join(dir, "nats.conf"), conf);
    const result = checkNatsConfig(join(dir, "nats.conf"), passwordEnv());
    expect(result.output).toContain("is valid");
  });
});
