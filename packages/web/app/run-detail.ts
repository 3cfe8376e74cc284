// One run opened: its figures, the model's text streaming, and its event log replayed from seq 1 then
// live (virtualised, so a 10,000-event run scrolls as fast as a short one). Cache breaks, failover
// (a new attempt, a resumed run), permission requests and tool calls are marked.
import { h, setAttr, setText } from "./dom.js";
import type { Feeds, LoggedEvent } from "./feeds.js";
import type { PageModel } from "./model.js";
import {
  cacheReadShare,
  describeEvent,
  elapsedOf,
  formatClock,
  formatElapsed,
  formatInteger,
  formatPercent,
  formatUsd,
  isFinalStatus,
  oneLine,
  promptTokens,
} from "./shared.js";
import { keyTarget, VirtualList } from "./virtual-list.js";

/** `stop` ends a run gracefully (its current turn or tool finishes), `abort` cuts it now. */
type ControlMode = "abort" | "stop";

const CONTROL_BUTTONS: Record<ControlMode, { id: string; label: string; className?: string }> = {
  abort: { id: "abort-run", label: "Abort", className: "danger" },
  stop: { id: "stop-run", label: "Stop" },
};

/** Height of every line of the event log. @unit px */
export const EVENT_ROW_HEIGHT = 26;

/** One line of the log, with what marks it. */
interface LogLine {
  logged: LoggedEvent;
  seq: number;
  type: string;
  attempt: number;
  ts: number;
  text: string;
  /** `failover`, `cache-break`, `permission`, `tool`, `error`, `end`, or none. */
  mark: string | undefined;
}

/**
 * What marks a line of the log: `failover` (the first event of a new attempt, or a resumed run),
 * `cache-break`, `permission`, `tool`, `error` (a denied tool, a failed or aborted run), `end`,
 * `unknown` (a newer event type), or nothing.
 * @param previousAttempt the highest attempt of the events before it (0 for the first).
 */
export function markOf(logged: LoggedEvent, previousAttempt: number): string | undefined {
  if (logged.kind === "unknown") return "unknown";
  const event = logged.event;
  if (event.attempt > previousAttempt && previousAttempt > 0) return "failover";
  switch (event.type) {
    case "accepted":
      return event.resumed ? "failover" : undefined;
    case "cache.break":
      return "cache-break";
    case "permission.requested":
    case "permission.resolved":
      return "permission";
    case "tool.call":
    case "tool.result":
      return "tool";
    case "tool.denied":
    case "failed":
    case "aborted":
      return "error";
    case "completed":
      return "end";
    default:
      return undefined;
  }
}

function textOf(logged: LoggedEvent, mark: string | undefined): string {
  if (logged.kind === "unknown") return "(an event type this page does not know)";
  const described = describeEvent(logged.event);
  return mark === "failover" && logged.event.type !== "accepted"
    ? `failover to attempt ${logged.event.attempt}: ${described}`
    : described;
}

function createEventRow(): HTMLElement {
  return h(
    "div",
    { class: "ev", role: "option" },
    h("span", { class: "ev-seq" }),
    h("span", { class: "ev-time" }),
    h("span", { class: "ev-type" }),
    h("span", { class: "ev-text" }),
  );
}

/** The detail panel of the opened run. */
export class RunDetail {
  readonly #model: PageModel;
  readonly #feeds: Feeds;
  readonly #panel: HTMLElement;
  readonly #list: VirtualList<LogLine>;
  readonly #scroller: HTMLElement;
  readonly #lines: LogLine[] = [];
  readonly #close: () => void;
  #runId: string | undefined;
  #stop: AbortController | undefined;
  #firstTs = 0;
  #attempt = 0;
  #streamTurn = 0;
  #streamText = "";
  #streamState = "";
  #follow = true;
  #mayAbort = false;
  /** Why the log is not live, while it is not (shown instead of the count until it is again). */
  #logProblem: string | undefined;
  /** The control button clicked once and waiting for its confirming click, if any. */
  #armed: ControlMode | undefined;
  #renderScheduled = false;

  constructor(model: PageModel, feeds: Feeds, panel: HTMLElement, close: () => void) {
    this.#model = model;
    this.#feeds = feeds;
    this.#panel = panel;
    this.#close = close;
    this.#scroller = panel.querySelector<HTMLElement>("#event-list")!;
    this.#list = new VirtualList<LogLine>({
      scroller: this.#scroller,
      rowHeight: EVENT_ROW_HEIGHT,
      create: createEventRow,
      render: (element, line, index, selected) => this.#renderEvent(element, line, index, selected),
    });
    this.#scroller.addEventListener("scroll", () => {
      this.#follow = this.#list.atEnd();
    });
    this.#scroller.addEventListener("click", (event) => {
      const row = (event.target as Element).closest<HTMLElement>(".ev");
      if (row?.dataset.index !== undefined) this.#selectEvent(Number(row.dataset.index));
    });
    this.#scroller.addEventListener("keydown", (event) => this.#key(event));
    panel.querySelector("#close-run")!.addEventListener("click", () => this.#close());
  }

  /** The run shown, if any. */
  get runId(): string | undefined {
    return this.#runId;
  }

  /** Sets whether the stop and abort buttons exist (only when the credentials may publish aborts). */
  setMayAbort(mayAbort: boolean): void {
    this.#mayAbort = mayAbort;
    this.refresh();
  }

  /** Opens `runId`: its log from seq 1, then live. */
  open(runId: string): void {
    if (this.#runId === runId) return;
    this.closeRun();
    this.#runId = runId;
    this.#panel.hidden = false;
    this.#panel.dataset.runId = runId;
    const stop = new AbortController();
    this.#stop = stop;
    this.#logProblem = "replaying…";
    void this.#feeds.followRun(
      runId,
      (logged) => this.#append(logged),
      stop.signal,
      (problem) => {
        if (stop.signal.aborted) return;
        this.#logProblem = problem;
        this.refresh();
      },
    );
    this.refresh();
  }

  /** Closes the run shown and stops following its log. */
  closeRun(): void {
    this.#stop?.abort();
    this.#stop = undefined;
    this.#runId = undefined;
    this.#lines.length = 0;
    this.#firstTs = 0;
    this.#attempt = 0;
    this.#streamTurn = 0;
    this.#streamText = "";
    this.#streamState = "";
    this.#follow = true;
    this.#armed = undefined;
    this.#logProblem = undefined;
    this.#list.setItems(this.#lines);
    this.#panel.hidden = true;
    delete this.#panel.dataset.runId;
  }

  /** Puts the keyboard focus on the event log. */
  focus(): void {
    this.#scroller.focus();
  }

  #append(logged: LoggedEvent): void {
    const seq = logged.kind === "event" ? logged.event.seq : logged.seq;
    const ts = logged.kind === "event" ? logged.event.ts : logged.ts;
    const attempt = logged.kind === "event" ? logged.event.attempt : logged.attempt;
    if (this.#firstTs === 0) this.#firstTs = ts;
    const mark = markOf(logged, this.#attempt);
    this.#attempt = Math.max(this.#attempt, attempt);
    const type = logged.kind === "event" ? logged.event.type : logged.type;
    this.#lines.push({ logged, seq, type, attempt, ts, text: textOf(logged, mark), mark });
    if (logged.kind === "event") {
      const event = logged.event;
      if (event.type === "llm.request") {
        this.#streamTurn = event.turn;
        this.#streamText = "";
        this.#streamState = "waiting for the model";
      } else if (event.type === "llm.delta") {
        if (event.turn !== this.#streamTurn) this.#streamText = "";
        this.#streamTurn = event.turn;
        this.#streamText += event.text;
        this.#streamState = "streaming";
      } else if (event.type === "llm.message") {
        this.#streamTurn = event.turn;
        const text = event.message.content
          .map((block) => (block.type === "text" ? block.text : `[${block.type}]`))
          .join("\n");
        if (text !== "") this.#streamText = text;
        this.#streamState = `answered (${event.stop_reason ?? "no stop reason"})`;
      }
    }
    this.#scheduleRender();
  }

  // A replay delivers thousands of events at once: the list and figures render once a frame, not
  // once an event (each render lays the page out).
  #scheduleRender(): void {
    if (this.#renderScheduled) return;
    this.#renderScheduled = true;
    requestAnimationFrame(() => {
      this.#renderScheduled = false;
      if (this.#runId === undefined) return;
      this.#list.setItems(this.#lines);
      if (this.#follow) this.#list.scrollToEnd();
      this.refresh();
    });
  }

  /** Renders the figures, the stream and the log again. */
  refresh(): void {
    const runId = this.#runId;
    if (runId === undefined) return;
    const panel = this.#panel;
    const known = this.#model.run(runId);
    const row = known?.row;
    setText(panel.querySelector("#run-title")!, row?.label ?? "run");
    setText(panel.querySelector("#run-id")!, runId);
    const status = row?.status ?? "unknown";
    const statusEl = panel.querySelector<HTMLElement>("#run-status")!;
    setText(statusEl, status);
    setAttr(statusEl, "class", `badge s-${status}`);
    if (row !== undefined) {
      const u = row.usage;
      const facts: Record<string, string> = {
        parent: known?.meta.parent ?? "–",
        daemon: row.daemonId ?? "–",
        attempt: row.attempt > 0 ? String(row.attempt) : "–",
        turn: row.turn > 0 ? String(row.turn) : "–",
        model: row.model ?? "–",
        input: formatInteger(u.input_tokens),
        "cache write": formatInteger(u.cache_write_5m_tokens + u.cache_write_1h_tokens),
        "cache read": formatInteger(u.cache_read_tokens),
        output: formatInteger(u.output_tokens),
        cached: promptTokens(u) > 0 ? formatPercent(cacheReadShare(u)) : "–",
        cost: formatUsd(u.cost_usd),
        elapsed: formatElapsed(elapsedOf(row, Date.now())),
      };
      for (const [name, value] of Object.entries(facts)) {
        const cell = panel.querySelector(`[data-fact="${name}"]`);
        if (cell !== null) setText(cell, value);
      }
      setText(
        panel.querySelector("#run-problem")!,
        isFinalStatus(row.status) && row.problem !== undefined ? oneLine(row.problem) : "",
      );
    }
    setText(
      panel.querySelector("#stream-state")!,
      this.#streamTurn > 0 ? `turn ${this.#streamTurn}: ${this.#streamState}` : "no model text yet",
    );
    const stream = panel.querySelector<HTMLElement>("#stream-text")!;
    if (stream.textContent !== this.#streamText) {
      stream.textContent = this.#streamText;
      stream.scrollTop = stream.scrollHeight;
    }
    const count = `${formatInteger(this.#lines.length)} event${this.#lines.length === 1 ? "" : "s"}`;
    const live = row !== undefined && isFinalStatus(row.status) ? "" : " · live";
    // A log that is not being followed says why, every render, rather than pretend to be live.
    setText(
      panel.querySelector("#log-state")!,
      this.#logProblem === undefined ? `${count}${live}` : `${count} · ${this.#logProblem}`,
    );
    panel.querySelector("#event-list")!.setAttribute("aria-setsize", String(this.#lines.length));
    // The stop and abort buttons exist only for credentials that may abort, and only while the run
    // may run.
    const actions = panel.querySelector<HTMLElement>("#run-actions")!;
    const wanted = this.#mayAbort && row !== undefined && !isFinalStatus(row.status);
    if (!wanted) this.#armed = undefined;
    // Prepended in reverse: Stop, then Abort, then the close button.
    for (const mode of ["abort", "stop"] as const) this.#controlButton(actions, mode, wanted);
  }

  #controlButton(actions: HTMLElement, mode: ControlMode, wanted: boolean): void {
    const { id, label, className } = CONTROL_BUTTONS[mode];
    let button = actions.querySelector<HTMLButtonElement>(`#${id}`);
    if (wanted && button === null) {
      button = h("button", { id, class: className, type: "button" }, label);
      button.addEventListener("click", () => void this.#controlClicked(mode));
      actions.prepend(button);
    } else if (!wanted && button !== null) {
      button.remove();
      button = null;
    }
    if (button !== null) setText(button, this.#armed === mode ? `Confirm ${label.toLowerCase()}` : label);
  }

  async #controlClicked(mode: ControlMode): Promise<void> {
    const runId = this.#runId;
    if (runId === undefined) return;
    if (this.#armed !== mode) {
      this.#armed = mode; // a second click confirms: one stray click never stops a run
      this.refresh();
      return;
    }
    this.#armed = undefined;
    await this.#feeds.control(runId, mode, `${mode === "stop" ? "stopped" : "aborted"} from forkd web`);
    this.refresh();
  }

  #renderEvent(element: HTMLElement, line: LogLine, index: number, selected: boolean): void {
    setAttr(element, "class", `ev${line.mark === undefined ? "" : ` m-${line.mark}`}`);
    setAttr(element, "aria-selected", selected ? "true" : "false");
    setAttr(element, "data-seq", String(line.seq));
    setAttr(element, "data-type", line.type);
    setAttr(element, "id", `ev-${index}`);
    const cells = element.children;
    setText(cells[0]!, `#${line.seq}`);
    setText(cells[1]!, `+${formatElapsed(line.ts - this.#firstTs)}`);
    setAttr(cells[1]!, "title", formatClock(line.ts));
    setText(cells[2]!, line.type);
    setText(cells[3]!, line.text);
  }

  #selectEvent(index: number): void {
    this.#list.select(index);
    this.#follow = this.#list.atEnd();
    this.#scroller.setAttribute("aria-activedescendant", `ev-${this.#list.selected}`);
    const line = this.#lines[this.#list.selected];
    const detail = this.#panel.querySelector<HTMLElement>("#event-json")!;
    detail.textContent =
      line === undefined
        ? ""
        : JSON.stringify(line.logged.kind === "event" ? line.logged.event : line.logged.raw, null, 2);
  }

  #key(event: KeyboardEvent): void {
    const at = Math.max(0, this.#list.selected);
    const to = keyTarget(event.key, at, this.#lines.length, this.#scroller.clientHeight, EVENT_ROW_HEIGHT);
    if (to !== undefined) {
      event.preventDefault();
      this.#selectEvent(to);
    }
  }
}
