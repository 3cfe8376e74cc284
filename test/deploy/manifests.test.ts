// The container, compose and Kubernetes files, parsed and checked against each other and against
// the daemon's configuration (packages/daemon/src/config.ts): images, environment names, ports,
// probes, drain grace versus termination grace, selectors.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { ROLE_PASSWORD_VARS, readRepoFile, repoPath } from "./support.js";

// ─── What the daemon understands ────────────────────────────────────────────────────────────────

const daemonConfigSource = readRepoFile("packages/daemon/src/config.ts");
/** Environment variables the daemon reads (`env.NAME` in its config loader), plus the SDK's own. */
const DAEMON_ENV = new Set([
  ...[...daemonConfigSource.matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!),
  "ANTHROPIC_BASE_URL",
  "ANTHROPIC_API_KEY",
]);
/** Top-level keys of DaemonConfigSchema (two-space indented `key:` lines of the z.object). */
const DAEMON_CONFIG_KEYS = (() => {
  const start = daemonConfigSource.indexOf("export const DaemonConfigSchema = z.object({");
  const end = daemonConfigSource.indexOf("\n});", start);
  const body = daemonConfigSource.slice(start, end);
  return new Set([...body.matchAll(/^ {2}([a-zA-Z]+):/gm)].map((m) => m[1]!));
})();
const BASH_POLICIES = /bash: z\.enum\(\[([^\]]*)\]\)/.exec(daemonConfigSource)?.[1]?.match(/[a-z-]+/g) ?? [];

function expectKnownEnv(names: Iterable<string>): void {
  for (const name of names) {
    expect(DAEMON_ENV.has(name), `${name} is not read by the daemon (packages/daemon/src/config.ts)`).toBe(
      true,
    );
  }
}

describe("the daemon's configuration surface (sanity of what the checks below rely on)", () => {
  it("is found in packages/daemon/src/config.ts", () => {
    for (const name of [
      "FORKD_NATS_URL",
      "NATS_USER",
      "NATS_PASSWORD",
      "FORKD_DRAIN_GRACE_MS",
      "FORKD_CONFIG",
    ]) {
      expect(DAEMON_ENV).toContain(name);
    }
    for (const key of ["nats", "concurrency", "workspace", "tools", "drainGraceMs", "metricsPort"]) {
      expect(DAEMON_CONFIG_KEYS).toContain(key);
    }
    expect(BASH_POLICIES).toContain("read-only");
  });
});

// ─── Dockerfile ─────────────────────────────────────────────────────────────────────────────────

describe("deploy/docker/Dockerfile", () => {
  const dockerfile = readRepoFile("deploy/docker/Dockerfile");
  const instructions = dockerfile
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  const stages = instructions.filter((line) => /^FROM /i.test(line));
  const finalStage = instructions.slice(instructions.lastIndexOf(stages.at(-1)!));

  it("builds in one stage and runs from another, both on node:22-slim", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages[0]).toMatch(/ AS build$/);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:22-slim$/m);
    expect(finalStage.some((line) => line.startsWith("COPY --from=build /out /app"))).toBe(true);
  });

  it("deploys @forkd/cli with production dependencies only", () => {
    expect(dockerfile).toMatch(/pnpm --filter @forkd\/cli deploy --prod/);
    expect(dockerfile).toMatch(/pnpm install --offline --frozen-lockfile/);
    const cli = JSON.parse(readRepoFile("packages/cli/package.json")) as { bin: Record<string, string> };
    expect(cli.bin.forkd).toBe("./dist/bin.js");
  });

  it("fetches with every patch of a patched dependency in place (pnpm refuses a lockfile whose patch is missing)", () => {
    const workspace = parse(readRepoFile("pnpm-workspace.yaml")) as {
      patchedDependencies?: Record<string, string>;
    };
    const patches = Object.values(workspace.patchedDependencies ?? {});
    expect(patches.length).toBeGreaterThan(0);
    const fetchAt = instructions.findIndex((line) => line.startsWith("RUN pnpm fetch"));
    const patchesAt = instructions.findIndex((line) => /^COPY patches \.\/patches$/.test(line));
    expect(fetchAt).toBeGreaterThan(0);
    expect(patchesAt).toBeGreaterThan(0);
    expect(patchesAt).toBeLessThan(fetchAt);
    for (const patch of patches) {
      expect(patch.startsWith("patches/")).toBe(true);
      expect(existsSync(repoPath(patch))).toBe(true);
    }
  });

  it("runs as a non-root user, `forkd daemon` by default, stopped by SIGTERM", () => {
    const user = finalStage.filter((line) => line.startsWith("USER ")).at(-1);
    expect(user).toBeDefined();
    const name = user!.slice(5).split(":")[0]!;
    expect(name).not.toMatch(/^(root|0)$/);
    expect(finalStage).toContain('ENTRYPOINT ["node", "/app/dist/bin.js"]');
    expect(finalStage).toContain('CMD ["daemon"]');
    expect(finalStage).toContain("STOPSIGNAL SIGTERM");
  });

  it("sets the daemon's runtime settings to the defaults of its launcher (bin/forkd-daemon)", () => {
    const launcher = readRepoFile("packages/daemon/bin/forkd-daemon");
    const semiSpace = /default_flags="(--max-semi-space-size=\d+)"/.exec(launcher)?.[1];
    const arenas = /MALLOC_ARENA_MAX:=(\d+)/.exec(launcher)?.[1];
    expect(semiSpace).toBeDefined();
    expect(arenas).toBeDefined();
    const env = finalStage.find((line) => line.startsWith("ENV NODE_OPTIONS="));
    expect(env?.split(/\s+/)).toEqual(["ENV", `NODE_OPTIONS=${semiSpace}`, `MALLOC_ARENA_MAX=${arenas}`]);
  });

  it("has its own .dockerignore that keeps host builds and secrets out of the context", () => {
    const ignore = readRepoFile("deploy/docker/Dockerfile.dockerignore").split("\n");
    for (const pattern of ["**/node_modules", "**/dist", ".git", "**/.env"])
      expect(ignore).toContain(pattern);
  });
});

// ─── compose.yaml ───────────────────────────────────────────────────────────────────────────────

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
  stop_signal?: string;
  init?: boolean;
}

describe("deploy/compose.yaml", () => {
  const compose = parse(readRepoFile("deploy/compose.yaml"), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const services = compose.services;
  const names = Object.keys(services);
  const natsNodes = names.filter((name) => services[name]!.image?.startsWith("nats:"));
  const daemons = names.filter((name) => services[name]!.command?.[0] === "daemon");
  const sims = names.filter((name) => services[name]!.command?.[0] === "sim");

  it("runs three NATS nodes, three daemons and the simulator", () => {
    expect(natsNodes.sort()).toEqual(["nats-1", "nats-2", "nats-3"]);
    expect(daemons.sort()).toEqual(["daemon-1", "daemon-2", "daemon-3"]);
    expect(sims).toEqual(["sim"]);
  });

  it("runs the official NATS image with this repository's cluster configs", () => {
    for (const [index, name] of natsNodes.sort().entries()) {
      const node = services[name]!;
      expect(node.image).toBe("nats:2.10-alpine");
      const mount = node.volumes!.find((volume) => volume.endsWith(":ro"))!;
      const [hostDir, containerDir] = mount.split(":");
      const configArg = node.command![node.command!.indexOf("-c") + 1]!;
      expect(configArg).toBe(`${containerDir}/cluster/node-${index + 1}.conf`);
      expect(existsSync(repoPath(`deploy/${hostDir}/cluster/node-${index + 1}.conf`))).toBe(true);
      expect(Object.keys(node.environment!).sort()).toEqual(Object.values(ROLE_PASSWORD_VARS).sort());
      expect(node.healthcheck?.test.join(" ")).toContain("8222/healthz");
    }
  });

  it("builds the daemons and the simulator from deploy/docker/Dockerfile", () => {
    for (const name of [...daemons, ...sims]) {
      const service = services[name]!;
      expect(service.build).toEqual({ context: "..", dockerfile: "deploy/docker/Dockerfile" });
      expect(existsSync(repoPath(service.build!.dockerfile))).toBe(true);
    }
    expect(services.sim!.command).toEqual(["sim", "--host", "0.0.0.0", "--port", "8080"]);
  });

  it("configures the daemons with names the daemon reads, as the daemon role, against the simulator", () => {
    const ids = new Set<string>();
    for (const name of daemons) {
      const env = services[name]!.environment!;
      expectKnownEnv(Object.keys(env));
      expect(env.FORKD_NATS_URL!.split(",")).toEqual(natsNodes.sort().map((node) => `nats://${node}:4222`));
      expect(env.NATS_USER).toBe("daemon");
      expect(env.NATS_PASSWORD).toMatch(/^\$\{FORKD_DAEMON_PASSWORD:-/);
      // compose interpolation: the simulator unless ANTHROPIC_BASE_URL is set for compose
      expect(env.ANTHROPIC_BASE_URL).toMatch(/^\$\{ANTHROPIC_BASE_URL:-http:\/\/sim:8080\}$/);
      expect(env.ANTHROPIC_API_KEY).toBeTruthy();
      expect(BASH_POLICIES).toContain(env.FORKD_BASH_POLICY);
      ids.add(env.FORKD_DAEMON_ID!);
    }
    expect(ids.size).toBe(3);
  });

  it("gives each daemon longer to stop than its drain grace", () => {
    for (const name of daemons) {
      const service = services[name]!;
      const drainSeconds = Number(service.environment!.FORKD_DRAIN_GRACE_MS) / 1000;
      const stopSeconds = Number(/^(\d+)s$/.exec(service.stop_grace_period ?? "")?.[1]);
      expect(stopSeconds).toBeGreaterThan(drainSeconds);
      expect(service.stop_signal ?? "SIGTERM").toBe("SIGTERM");
      expect(service.init).toBe(true);
    }
  });

  it("checks health everywhere and starts daemons only once NATS and the simulator are healthy", () => {
    for (const name of names) expect(services[name]!.healthcheck, name).toBeDefined();
    for (const name of daemons) {
      const service = services[name]!;
      expect(service.healthcheck!.test.join(" ")).toContain(
        `:${service.environment!.FORKD_METRICS_PORT}/metrics`,
      );
      for (const dependency of [...natsNodes, ...sims]) {
        expect(service.depends_on?.[dependency]?.condition).toBe("service_healthy");
      }
    }
  });
});

/** Runs a compose `CMD node -e <script>` healthcheck with the port rewritten; resolves with its exit code. */
function runNodeHealthcheck(test: string[], fromPort: number, toPort: number): Promise<number> {
  expect(test.slice(0, 3)).toEqual(["CMD", "node", "-e"]);
  const script = test[3]!.replace(`:${fromPort}/`, `:${toPort}/`);
  return new Promise((resolve) => {
    execFile(process.execPath, ["-e", script], { timeout: 20_000 }, (error) =>
      resolve(error ? Number((error as { code?: number }).code ?? 1) : 0),
    );
  });
}

describe("deploy/compose.yaml healthchecks, run", () => {
  const compose = parse(readRepoFile("deploy/compose.yaml"), { merge: true }) as {
    services: Record<string, ComposeService>;
  };

  it.each([
    ["daemon-1", 9464, "/metrics"],
    ["sim", 8080, "/v1/sim/health"],
  ] as const)("%s: healthy while %s answers on %s, unhealthy once it is gone", async (name, port, path) => {
    const test = compose.services[name]!.healthcheck!.test;
    const requested: string[] = [];
    const server = createServer((request, response) => {
      requested.push(request.url ?? "");
      response.writeHead(request.url === path ? 200 : 404).end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const freePort = (server.address() as AddressInfo).port;
    try {
      expect(await runNodeHealthcheck(test, port, freePort)).toBe(0);
      expect(requested).toEqual([path]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await runNodeHealthcheck(test, port, freePort)).toBe(1);
  });
});

// ─── Kubernetes ─────────────────────────────────────────────────────────────────────────────────

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // biome-ignore lint/suspicious/noExplicitAny: manifests are checked field by field below
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

function loadManifests(file: string): K8sObject[] {
  return parseAllDocuments(readRepoFile(`deploy/k8s/${file}`)).map((doc) => {
    expect(doc.errors, file).toEqual([]);
    return doc.toJS() as K8sObject;
  });
}

function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

describe("deploy/k8s", () => {
  const kustomization = parse(readRepoFile("deploy/k8s/kustomization.yaml")) as {
    namespace: string;
    resources: string[];
    images: { name: string; newTag?: string; newName?: string }[];
  };
  const objects = kustomization.resources.flatMap(loadManifests);
  const find = (kind: string) => {
    const found = objects.filter((object) => object.kind === kind);
    expect(found, kind).toHaveLength(1);
    return found[0]!;
  };
  const deployment = find("Deployment");
  const pdb = find("PodDisruptionBudget");
  const service = find("Service");
  const configMap = find("ConfigMap");
  const podSpec = deployment.spec.template.spec;
  const container = podSpec.containers[0];
  const templateLabels = deployment.spec.template.metadata.labels as Record<string, string>;
  const configFileEnv = (container.env as { name: string; value?: string }[]).find(
    (e) => e.name === "FORKD_CONFIG",
  );
  const daemonJson = JSON.parse(Object.values(configMap.data!)[0]!) as Record<string, unknown> & {
    drainGraceMs: number;
    metricsPort: number;
    metricsHost: string;
    workspace: string;
    nats: { servers: string[] };
    tools: { bash: string };
  };

  it("puts everything into the forkd namespace, and leaves the secret template out", () => {
    expect(kustomization.namespace).toBe("forkd");
    expect(find("Namespace").metadata.name).toBe("forkd");
    for (const object of objects.filter((o) => o.kind !== "Namespace"))
      expect(object.metadata.namespace).toBe("forkd");
    expect(kustomization.resources).not.toContain("secret.yaml");
    expect(kustomization.images.map((image) => image.name)).toContain(container.image.split(":")[0]);
  });

  it("runs three daemons whose selector matches their pods", () => {
    expect(deployment.spec.replicas).toBe(3);
    expect(selects(deployment.spec.selector.matchLabels, templateLabels)).toBe(true);
    expect(container.args).toEqual(["daemon"]);
  });

  it("has a disruption budget of one pod that selects exactly the daemons", () => {
    expect(pdb.apiVersion).toBe("policy/v1");
    expect(pdb.spec.maxUnavailable).toBe(1);
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    expect(selects(pdb.spec.selector.matchLabels, templateLabels)).toBe(true);
  });

  it("reads its config file from the ConfigMap, and every key there is a daemon config key", () => {
    const mount = (container.volumeMounts as { name: string; mountPath: string }[]).find((m) =>
      configFileEnv!.value!.startsWith(`${m.mountPath}/`),
    )!;
    const volume = (podSpec.volumes as { name: string; configMap?: { name: string } }[]).find(
      (v) => v.name === mount.name,
    )!;
    expect(volume.configMap?.name).toBe(configMap.metadata.name);
    expect(Object.keys(configMap.data!)).toContain(configFileEnv!.value!.slice(mount.mountPath.length + 1));
    for (const key of Object.keys(daemonJson)) expect(DAEMON_CONFIG_KEYS, key).toContain(key);
    expect(BASH_POLICIES).toContain(daemonJson.tools.bash);
    expect(daemonJson.nats.servers).toEqual(["nats://nats:4222"]);
  });

  it("passes only environment the daemon reads, with the NATS credentials and API key from a Secret", () => {
    const env = (container.env as { name: string }[]).map((e) => e.name);
    expectKnownEnv(env);
    const secretName = container.envFrom[0].secretRef.name;
    const [daemonSecret] = loadManifests("secret.yaml");
    expect(daemonSecret!.metadata.name).toBe(secretName);
    expect(Object.keys(daemonSecret!.stringData!).sort()).toEqual([
      "ANTHROPIC_API_KEY",
      "NATS_PASSWORD",
      "NATS_USER",
    ]);
    expectKnownEnv(Object.keys(daemonSecret!.stringData!));
    expect(daemonSecret!.stringData!.NATS_USER).toBe("daemon");
  });

  it("allows more termination grace than the drain grace, with no preStop hook", () => {
    const drainMs =
      Number(
        (container.env as { name: string; value?: string }[]).find((e) => e.name === "FORKD_DRAIN_GRACE_MS")
          ?.value,
      ) || daemonJson.drainGraceMs;
    expect(drainMs).toBe(30_000);
    expect(podSpec.terminationGracePeriodSeconds).toBeGreaterThan(drainMs / 1000);
    expect(container.lifecycle?.preStop).toBeUndefined();
  });

  it("probes /metrics on the port the daemon serves it on", () => {
    const port = (container.ports as { name: string; containerPort: number }[]).find(
      (p) => p.name === "metrics",
    )!;
    expect(port.containerPort).toBe(daemonJson.metricsPort);
    expect(daemonJson.metricsPort).toBe(9464);
    expect(daemonJson.metricsHost).toBe("0.0.0.0");
    for (const probe of ["readinessProbe", "livenessProbe"]) {
      expect(container[probe].httpGet).toEqual({ path: "/metrics", port: "metrics" });
    }
  });

  it("runs non-root on a read-only root filesystem, the workspace on an emptyDir", () => {
    expect(podSpec.securityContext.runAsNonRoot).toBe(true);
    expect(podSpec.securityContext.runAsUser).toBeGreaterThan(0);
    expect(container.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    const workspace = (container.volumeMounts as { name: string; mountPath: string }[]).find(
      (m) => m.mountPath === daemonJson.workspace,
    )!;
    const volume = (podSpec.volumes as { name: string; emptyDir?: object }[]).find(
      (v) => v.name === workspace.name,
    )!;
    expect(volume.emptyDir).toBeDefined();
    expect(container.resources.requests).toBeDefined();
    expect(container.resources.limits.memory).toBeDefined();
  });

  it("exposes the metrics of every pod through a headless Service with scrape annotations", () => {
    expect(selects(service.spec.selector, templateLabels)).toBe(true);
    expect(service.spec.clusterIP).toBe("None");
    expect(service.spec.ports).toEqual([
      { name: "metrics", port: 9464, targetPort: "metrics", protocol: "TCP" },
    ]);
    expect(service.metadata.annotations).toMatchObject({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": String(daemonJson.metricsPort),
      "prometheus.io/path": "/metrics",
    });
  });
});
