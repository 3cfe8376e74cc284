// The simulator's own process (started by sim-process.ts): a provider is remote in the real world, so
// its CPU (parsing and hashing each ~190 kB body at 48k) must not share the measured process's event
// loop. Reports what the benchmarks time — small projections of the simulator's events, never the
// bodies — to the parent over the IPC channel, stamped with this process's clock.
import { requestBodyBytes, startSim } from "@forkd/sim";
import { tagOf } from "./fixtures.js";
import type { SimHostCommand, SimHostConfig, SimHostMessage } from "./sim-process.js";
import { now } from "./stats.js";

const config = JSON.parse(process.argv[2] ?? "{}") as SimHostConfig;
const send = (message: SimHostMessage): void => {
  process.send?.(message);
};

const sim = await startSim({ latency: config.latency, logLimit: 0 });
const forwarded = new Set(config.events);
if (forwarded.has("request")) {
  sim.on("request", (entry) => {
    send({
      type: "event",
      event: "request",
      payload: {
        seq: entry.seq,
        path: entry.path,
        tag: tagOf(requestBodyBytes(entry) ?? entry.body),
        receivedAt: entry.receivedAt,
        acceptedAt: entry.acceptedAt,
      },
    });
  });
}
if (forwarded.has("accepted"))
  sim.on("accepted", (event) => {
    send({ type: "event", event: "accepted", payload: { seq: event.seq, at: event.at } });
  });
if (forwarded.has("firstByte"))
  sim.on("firstByte", (event) => {
    send({ type: "event", event: "firstByte", payload: { seq: event.seq, at: event.at } });
  });

process.on("message", (command: SimHostCommand) => {
  if (command.type === "ping") send({ type: "pong", id: command.id, at: now() });
  else if (command.type === "close") void sim.close().then(() => process.exit(0));
});
// The benchmark process went away (crashed or killed): nothing is left behind.
process.on("disconnect", () => process.exit(0));
send({ type: "ready", url: sim.url });
