// The run list: groups (by parent, and group when the registry has one) with their runs, live, in
// the order first seen; filters and search; keyboard selection. Virtualised: 1,000 runs keep ~40 rows
// in the DOM.
import { h, setAttr, setText } from "./dom.js";
import type { ListLine, PageModel, RunFilter } from "./model.js";
import {
  cacheReadShare,
  elapsedOf,
  formatCompact,
  formatElapsed,
  formatPercent,
  formatUsd,
  isFinalStatus,
  oneLine,
  promptTokens,
  type RunRow,
} from "./shared.js";
import { keyTarget, VirtualList } from "./virtual-list.js";

/** Height of every line of the list. @unit px */
export const RUN_ROW_HEIGHT = 34;

const COLUMNS = [
  "status",
  "run",
  "daemon",
  "attempt",
  "turn",
  "tokens",
  "cache",
  "cost",
  "elapsed",
  "activity",
];

function tokensByKind(row: RunRow): string {
  const u = row.usage;
  if (promptTokens(u) + u.output_tokens === 0) return "–";
  return `in ${formatCompact(u.input_tokens)} · w ${formatCompact(u.cache_write_5m_tokens + u.cache_write_1h_tokens)} · r ${formatCompact(u.cache_read_tokens)} · out ${formatCompact(u.output_tokens)}`;
}

function createRow(): HTMLElement {
  const row = h("div", { class: "line", role: "option" });
  for (const column of COLUMNS) row.append(h("span", { class: `c-${column}` }));
  return row;
}

function renderLine(element: HTMLElement, line: ListLine, index: number, selected: boolean): void {
  const cells = element.children;
  setAttr(element, "aria-selected", selected ? "true" : "false");
  setAttr(element, "id", `line-${index}`);
  if (line.kind === "group") {
    setAttr(element, "class", "line group");
    setAttr(element, "data-run-id", undefined);
    setAttr(element, "data-status", undefined);
    setAttr(element, "data-group", line.key);
    setText(cells[0]!, "");
    setText(
      cells[1]!,
      `${line.title} — ${line.runs} run${line.runs === 1 ? "" : "s"}, ${line.running > 0 ? `${line.running} active` : "all ended"}`,
    );
    setAttr(cells[1]!, "title", line.title);
    setText(cells[2]!, "");
    setText(cells[3]!, "");
    setText(cells[4]!, "");
    setText(cells[5]!, "");
    setText(cells[6]!, "");
    setText(cells[7]!, formatUsd(line.costUsd));
    setText(cells[8]!, "");
    setText(cells[9]!, "");
    return;
  }
  const { row } = line;
  const now = Date.now();
  setAttr(element, "class", `line run s-${row.status}`);
  setAttr(element, "data-run-id", row.runId);
  setAttr(element, "data-status", row.status);
  setAttr(element, "data-group", undefined);
  setText(cells[0]!, row.status);
  setText(cells[1]!, row.label === undefined ? row.runId : `${row.label} · ${row.runId}`);
  setAttr(cells[1]!, "title", row.runId);
  setText(cells[2]!, row.daemonId ?? "–");
  setText(cells[3]!, row.attempt > 0 ? `#${row.attempt}` : "–");
  setText(cells[4]!, row.turn > 0 ? `turn ${row.turn}` : "–");
  setText(cells[5]!, tokensByKind(row));
  setText(cells[6]!, promptTokens(row.usage) > 0 ? formatPercent(cacheReadShare(row.usage)) : "–");
  setText(
    cells[7]!,
    row.usage.llm_calls > 0 || row.usage.cost_usd !== 0 ? formatUsd(row.usage.cost_usd) : "–",
  );
  setText(cells[8]!, formatElapsed(elapsedOf(row, now)));
  setText(
    cells[9]!,
    isFinalStatus(row.status) ? (row.problem === undefined ? "" : oneLine(row.problem)) : row.activity,
  );
}

/** The run list and its filters. */
export class RunsView {
  readonly #model: PageModel;
  readonly #list: VirtualList<ListLine>;
  readonly #scroller: HTMLElement;
  readonly #open: (runId: string) => void;
  readonly #empty: HTMLElement;
  #filter: RunFilter = { text: "", status: "all" };
  #version = -1;

  constructor(model: PageModel, scroller: HTMLElement, empty: HTMLElement, open: (runId: string) => void) {
    this.#model = model;
    this.#scroller = scroller;
    this.#empty = empty;
    this.#open = open;
    this.#list = new VirtualList<ListLine>({
      scroller,
      rowHeight: RUN_ROW_HEIGHT,
      create: createRow,
      render: renderLine,
    });
    scroller.addEventListener("click", (event) => {
      const line = (event.target as Element).closest<HTMLElement>(".line");
      if (line?.dataset.index === undefined) return;
      this.#list.select(Number(line.dataset.index));
      this.#openSelected();
    });
    scroller.addEventListener("keydown", (event) => this.#key(event));
  }

  /** Changes what the list shows. */
  setFilter(filter: RunFilter): void {
    this.#filter = filter;
    this.#version = -1;
    this.refresh();
  }

  /** Renders again when the model changed; `tick` re-renders the elapsed times of running runs. */
  refresh(tick = false): void {
    if (this.#model.version === this.#version) {
      if (tick) this.#list.schedule();
      return;
    }
    this.#version = this.#model.version;
    const lines = this.#model.lines(this.#filter);
    this.#empty.hidden = lines.length > 0;
    this.#list.setItems(lines);
    this.#scroller.setAttribute("aria-activedescendant", `line-${this.#list.selected}`);
  }

  /** Puts the keyboard focus on the list, selecting its first run when none is. */
  focus(): void {
    if (this.#list.selected < 0) this.#list.select(this.#list.items.findIndex((line) => line.kind === "run"));
    this.#scroller.focus();
  }

  #openSelected(): void {
    const line = this.#list.items[this.#list.selected];
    if (line?.kind === "run") this.#open(line.row.runId);
  }

  #key(event: KeyboardEvent): void {
    const at = this.#list.selected;
    let to = keyTarget(event.key, at, this.#list.items.length, this.#scroller.clientHeight, RUN_ROW_HEIGHT);
    if (to !== undefined) {
      event.preventDefault();
      // Group headers are not runs: the selection steps over them (the way it was going).
      const step = to < at ? -1 : 1;
      while (this.#list.items[to]?.kind === "group" && this.#list.items[to + step] !== undefined) to += step;
      this.#list.select(to);
      this.#scroller.setAttribute("aria-activedescendant", `line-${this.#list.selected}`);
    } else if (event.key === "Enter") {
      event.preventDefault();
      this.#openSelected();
    }
  }
}
