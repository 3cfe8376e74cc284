import { describe, expect, it } from "vitest";
import { specSeqOfAck } from "./failover.js";

describe("specSeqOfAck", () => {
  it("reads the stream sequence of the specs consumer's ack subjects, old and new forms", () => {
    expect(specSeqOfAck("$JS.ACK.SPECS.daemons.2.41.7.1795622261875584348.0", "SPECS", "daemons")).toBe(41);
    expect(
      specSeqOfAck("$JS.ACK.hub.ACCHASH.SPECS.daemons.1.42.9.1795622261875584348.3.rnd", "SPECS", "daemons"),
    ).toBe(42);
    expect(
      specSeqOfAck("$JS.ACK._.ACCHASH.SPECS.daemons.1.43.9.1795622261875584348.3", "SPECS", "daemons"),
    ).toBe(43);
  });

  it("refuses another stream's or consumer's subject, and malformed ones", () => {
    expect(specSeqOfAck("$JS.ACK.OTHER.daemons.1.41.7.1.0", "SPECS", "daemons")).toBeUndefined();
    expect(specSeqOfAck("$JS.ACK.SPECS.other.1.41.7.1.0", "SPECS", "daemons")).toBeUndefined();
    expect(specSeqOfAck("$JS.ACK.SPECS.daemons.1.x.7.1.0", "SPECS", "daemons")).toBeUndefined();
    expect(specSeqOfAck("$JS.ACK.SPECS.daemons.1.0.7.1.0", "SPECS", "daemons")).toBeUndefined();
    expect(specSeqOfAck("$JS.ACK.SPECS.daemons.1.41.7.1", "SPECS", "daemons")).toBeUndefined();
    expect(specSeqOfAck("agent.fork.x", "SPECS", "daemons")).toBeUndefined();
  });
});
