import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { PromptCache } from "./cache.js";
import { ManualClock } from "./clock.js";
import { Exchanges } from "./exchanges.js";
import { RequestLog } from "./log.js";
import { type DisconnectEvent, type FirstByteEvent, SimEventBus } from "./sim-events.js";

function parts() {
  const cache = new PromptCache({ clock: new ManualClock(), minCacheableTokens: () => 1024 });
  const log = new RequestLog();
  const events = new SimEventBus();
  return { cache, log, events, exchanges: new Exchanges({ cache, log, events }) };
}

function request(url: string) {
  const req = new IncomingMessage(new Socket());
  req.method = "POST";
  req.url = url;
  return { req, res: new ServerResponse(req) };
}

describe("Exchanges", () => {
  it("numbers exchanges in arrival order, with an id in the request-id header and the path without trailing slashes", () => {
    const { exchanges } = parts();
    const first = request("/v1/messages/?beta=true");
    const { ex, url } = exchanges.open(first.req, first.res);
    expect(ex.seq).toBe(1);
    expect(ex.id).toMatch(/^req_sim[0-9a-f]{6}0{7}1$/);
    expect(first.res.getHeader("request-id")).toBe(ex.id);
    expect(ex.entry).toMatchObject({ seq: 1, id: ex.id, method: "POST", path: "/v1/messages", status: null });
    expect(url.searchParams.get("beta")).toBe("true");
    const second = request("/");
    expect(exchanges.open(second.req, second.res).ex.seq).toBe(2);
  });

  it("logs an exchange once, however often it is finished", () => {
    const { exchanges, log, events } = parts();
    const logged: string[] = [];
    events.on("request", (e) => logged.push(e.id));
    const { req, res } = request("/v1/messages");
    const { ex } = exchanges.open(req, res);
    exchanges.finish(ex);
    exchanges.finish(ex);
    expect(log.entries().map((e) => e.id)).toEqual([ex.id]);
    expect(logged).toEqual([ex.id]);
    expect(ex.entry.usage).toBeNull();
  });

  it("reports the first byte with the input charged, and bills the output sent when it ends", () => {
    const { exchanges, events } = parts();
    const seen: FirstByteEvent[] = [];
    events.on("firstByte", (e) => seen.push(e));
    const { req, res } = request("/v1/messages");
    const { ex } = exchanges.open(req, res);
    exchanges.firstByte(ex, true); // no input usage decided yet: nothing to report
    ex.inputUsage = {
      input_tokens: 10,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      service_tier: "standard",
    };
    ex.outputTokens = 5;
    exchanges.firstByte(ex, true);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ seq: 1, stream: true, usage: { input_tokens: 10, output_tokens: 5 } });
    ex.entry.outputTokensSent = 3;
    exchanges.finish(ex);
    expect(ex.entry.usage).toMatchObject({ input_tokens: 10, output_tokens: 3 });
  });

  it("reports a client that leaves before its response is complete, but not one cut by the server closing", () => {
    const { exchanges, events } = parts();
    const left: DisconnectEvent[] = [];
    events.on("disconnect", (e) => left.push(e));
    const early = request("/v1/messages");
    const { ex } = exchanges.open(early.req, early.res);
    exchanges.track(ex);
    early.res.emit("close");
    expect(ex.abort.signal.aborted).toBe(true);
    expect(ex.entry.disconnected).toBe(true);
    expect(ex.logged).toBe(true);
    expect(left).toEqual([
      { seq: 1, id: ex.id, at: ex.entry.disconnectedAt, afterFirstByte: false, outputTokensSent: 0 },
    ]);

    const late = request("/v1/messages");
    const closing = exchanges.open(late.req, late.res).ex;
    exchanges.track(closing);
    exchanges.abortAll();
    expect(closing.abort.signal.aborted).toBe(true);
    late.res.emit("close");
    expect(closing.entry.disconnected).toBe(false);
    expect(left).toHaveLength(1);
    exchanges.finishAll();
    expect(closing.logged).toBe(true);
  });
});
