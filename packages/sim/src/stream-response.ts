// A streamed response on the wire: its frames paced to the output speed, and cut or ended with an
// error event where a fault says so.
import { hiResNow } from "./clock.js";
import { apiErrorBody } from "./errors.js";
import type { Exchange } from "./exchange.js";
import { sleep } from "./exchange.js";
import { FAULT_MESSAGES, type FaultSpec } from "./faults.js";
import { type Frame, sseEvent } from "./sse.js";

/**
 * Writes `frames` as a server-sent event stream at `tps` output tokens per second (0: at once),
 * calling `onFirstByte` as the headers go out (the cache entries become readable then), and cuts the
 * connection or ends with an error event where `fault` says so.
 */
export async function streamFrames(
  ex: Exchange,
  frames: Frame[],
  tps: number,
  fault: FaultSpec | null,
  onFirstByte: (ex: Exchange, stream: boolean) => void,
): Promise<void> {
  const { res } = ex;
  const signal = ex.abort.signal;
  const cutAt = fault !== null && fault.kind !== "status" ? fault : null;
  const t0 = hiResNow();
  let sent = 0;
  let buf = "";
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  ex.entry.status = 200;
  onFirstByte(ex, true);
  if (tps <= 0 && cutAt === null) {
    // Nothing to pace or cut: one write (the cache entry is already readable).
    for (const f of frames) sent += f.tokens;
    ex.entry.outputTokensSent = sent;
    res.end(frames.map((f) => f.data).join(""));
    return;
  }
  res.write(frames[0]!.data);
  for (let j = 1; j < frames.length; j++) {
    const f = frames[j]!;
    if (cutAt !== null && (sent >= cutAt.afterTokens || f.final === true)) {
      if (cutAt.kind === "cut") {
        if (buf !== "") res.write(buf);
        ex.entry.cut = true;
        res.destroy();
      } else {
        const msg = FAULT_MESSAGES[cutAt.errorType] ?? "Simulated fault";
        res.end(buf + sseEvent("error", apiErrorBody(cutAt.errorType, msg, ex.id)));
        ex.entry.errorType = cutAt.errorType;
        ex.entry.errorMessage = msg;
      }
      return;
    }
    if (tps > 0 && (f.tokens > 0 || f.final === true)) {
      const wait = t0 + (sent / tps) * 1000 - hiResNow();
      if (wait >= 1) {
        if (buf !== "") res.write(buf);
        buf = "";
        if (!(await sleep(wait, signal))) return;
      }
    }
    buf += f.data;
    sent += f.tokens;
    ex.entry.outputTokensSent = sent;
  }
  res.end(buf);
}
