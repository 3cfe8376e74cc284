// A three-node NATS cluster whose links between nodes can be cut: every route goes through a TCP
// relay per direction (node i dialling node j), so `isolate(k)` silences every link of node k while
// its processes and its client port stay up — a node cut from the others, its clients still
// connected to it. (Network namespaces would need servers on addresses other than 127.0.0.1.)
import { type NatsClusterHandle, type NatsServerHandle, startNatsCluster } from "@forkd/testing";
import { type PartitionRelay, startPartitionRelay } from "./partition.js";

/** A cluster with cuttable links between its nodes. */
export interface PartitionableCluster {
  readonly cluster: NatsClusterHandle;
  /** Cuts every link between `node` and the other nodes, both ways. */
  isolate(node: NatsServerHandle): void;
  /** Carries every cut link again; with `reset`, ends the cut connections so the routes are remade. */
  heal(options?: { reset?: boolean }): void;
  /** Stops the cluster and its relays. */
  stop(): Promise<void>;
}

/** Starts a cluster of `nodes` (default 3) whose routes run through cuttable relays. */
export async function startPartitionableCluster(nodes = 3): Promise<PartitionableCluster> {
  const links = new Map<string, { from: number; to: number; relay: PartitionRelay }>();
  const cluster = await startNatsCluster({
    nodes,
    config: 'ping_interval: "1s"\nping_max: 3',
    routeVia: async (from, to, target) => {
      const key = `${from}->${to}`;
      await links.get(key)?.relay.close(); // a retried start picks new ports
      const relay = await startPartitionRelay(`nats-route://${target}`);
      links.set(key, { from, to, relay });
      return new URL(relay.url).host;
    },
  });
  const linksOf = (node: NatsServerHandle) => {
    const index = cluster.nodes.indexOf(node);
    if (index < 0) throw new Error(`${node.name} is not a node of this cluster`);
    return [...links.values()].filter((link) => link.from === index || link.to === index);
  };
  return {
    cluster,
    isolate: (node) => {
      for (const link of linksOf(node)) link.relay.cut();
    },
    heal: (options) => {
      for (const link of links.values()) if (link.relay.isCut) link.relay.heal(options);
    },
    stop: async () => {
      await cluster.stop();
      await Promise.all([...links.values()].map((link) => link.relay.close()));
    },
  };
}
