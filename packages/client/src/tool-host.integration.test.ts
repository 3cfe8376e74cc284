// serveTools against a real nats-server, with calls made as a daemon makes them: every parent of the
// account may watch `agent.toolhost.>`, so each call and its proof are seen and may be sent again.
import {
  DEFAULT_SUBJECT_PREFIX,
  forkSubjects,
  PROTOCOL_VERSION,
  toolHostRequestCodec,
  toolHostResponseCodec,
} from "@forkd/protocol";
import { toolHostCallProof } from "@forkd/protocol/internal";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_REMEMBERED_TOOL_CALLS, serveTools, type ToolHost } from "./tool-host.js";

const REPLY_KEY = "0123456789abcdef".repeat(4);
const HOST_ID = "replayed-host";

describe("a tool host's calls", () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;
  let host: ToolHost;
  const ran: unknown[] = [];

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    host = serveTools(nc, {
      hostId: HOST_ID,
      replyKey: REPLY_KEY,
      tools: {
        AppendNote: (input) => {
          ran.push(input);
          return "appended";
        },
      },
    });
  });

  afterAll(async () => {
    await host?.stop();
    await nc?.close();
    await server?.stop();
  });

  /** A call as the run's daemon sends it, proved with the host's key. */
  function call(toolUseId: string, input: unknown) {
    const request = {
      v: PROTOCOL_VERSION,
      run_id: "run-1",
      tool_use_id: toolUseId,
      name: "AppendNote",
      input,
    };
    return { ...request, proof: toolHostCallProof(REPLY_KEY, request) };
  }

  async function send(request: object) {
    const reply = await nc.request(
      forkSubjects(DEFAULT_SUBJECT_PREFIX).toolHost(HOST_ID),
      toolHostRequestCodec.encode(request as never),
      {
        timeout: 5_000,
      },
    );
    return toolHostResponseCodec.decode(reply.data);
  }

  it("runs a call once: sent again as seen, or with another input under its proof, it is refused", async () => {
    const seen = call("toolu_once", { line: "buy milk" });
    expect(await send(seen)).toMatchObject({ content: "appended", is_error: false });
    expect(await send(seen)).toMatchObject({
      is_error: true,
      content: expect.stringContaining("already taken"),
    });
    const otherInput = { ...call("toolu_other", { line: "buy milk" }), input: { line: "rm -rf ~" } };
    expect(await send(otherInput)).toMatchObject({
      is_error: true,
      content: expect.stringContaining("serves only"),
    });
    expect(ran).toEqual([{ line: "buy milk" }]);
  });

  it(`remembers the last ${MAX_REMEMBERED_TOOL_CALLS} calls it took, and no more`, async () => {
    ran.length = 0;
    const first = call("toolu_first", { n: -1 });
    await send(first);
    for (let i = 1; i < MAX_REMEMBERED_TOOL_CALLS; i++) await send(call(`toolu_${i}`, { n: i }));
    // The first is the oldest of exactly MAX_REMEMBERED_TOOL_CALLS calls: still remembered.
    expect(await send(first)).toMatchObject({
      is_error: true,
      content: expect.stringContaining("already taken"),
    });
    await send(call("toolu_last", { n: MAX_REMEMBERED_TOOL_CALLS }));
    // One more pushed it out: a call that old is no longer known (its daemon's timeout is long past).
    expect(await send(first)).toMatchObject({ content: "appended", is_error: false });
    expect(ran).toHaveLength(MAX_REMEMBERED_TOOL_CALLS + 2);
  });
});
