// The cost of each group beside what the same tokens would cost without forking (no shared cache), as
// an inline SVG bar chart and a table.
import { h, setText } from "./dom.js";
import type { GroupCost, PageModel } from "./model.js";
import { formatPercent, formatUsd } from "./shared.js";

const SVG = "http://www.w3.org/2000/svg";
const BAR = 14;
const GAP = 6;
const GROUP_GAP = 18;
const LABEL_WIDTH = 220;
const CHART_WIDTH = 640;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  return element;
}

function label(text: string, max = 32): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The chart of one set of groups. */
export function costChart(groups: readonly GroupCost[]): SVGSVGElement {
  const height = Math.max(1, groups.length) * (2 * BAR + GAP + GROUP_GAP);
  const chart = svg("svg", {
    viewBox: `0 0 ${CHART_WIDTH} ${height}`,
    width: "100%",
    role: "img",
    "aria-label": "Cost per group with forking and without",
    class: "chart",
  });
  const most = Math.max(1e-9, ...groups.map((group) => Math.max(group.forkedUsd, group.unforkedUsd)));
  const scale = (CHART_WIDTH - LABEL_WIDTH - 90) / most;
  groups.forEach((group, i) => {
    const y = i * (2 * BAR + GAP + GROUP_GAP);
    const name = svg("text", { x: 0, y: y + BAR + 2, class: "chart-label" });
    name.textContent = label(group.title);
    chart.append(name);
    for (const [j, kind, usd] of [
      [0, "forked", group.forkedUsd],
      [1, "unforked", group.unforkedUsd],
    ] as const) {
      const top = y + j * (BAR + GAP);
      const bar = svg("rect", {
        x: LABEL_WIDTH,
        y: top,
        width: Math.max(1, usd * scale),
        height: BAR,
        class: `bar bar-${kind}`,
        "data-group": group.key,
      });
      const title = svg("title", {});
      title.textContent = `${group.title}: ${kind} ${formatUsd(usd)}`;
      bar.append(title);
      const value = svg("text", {
        x: LABEL_WIDTH + Math.max(1, usd * scale) + 6,
        y: top + BAR - 3,
        class: "chart-value",
      });
      value.textContent = formatUsd(usd);
      chart.append(bar, value);
    }
  });
  return chart;
}

/** The costs tab. */
export class CostsView {
  readonly #model: PageModel;
  readonly #root: HTMLElement;
  #version = -1;

  constructor(model: PageModel, root: HTMLElement) {
    this.#model = model;
    this.#root = root;
  }

  /** Renders again when the model changed. */
  refresh(): void {
    if (this.#model.version === this.#version) return;
    this.#version = this.#model.version;
    const groups = this.#model.groupCosts();
    const chartBox = this.#root.querySelector<HTMLElement>("#cost-chart")!;
    chartBox.replaceChildren(
      groups.length === 0 ? h("p", { class: "muted" }, "No model calls yet.") : costChart(groups),
    );
    const body = this.#root.querySelector<HTMLElement>("#cost-table tbody")!;
    let forked = 0;
    let unforked = 0;
    body.replaceChildren(
      ...groups.map((group) => {
        forked += group.forkedUsd;
        unforked += group.unforkedUsd;
        return h(
          "tr",
          {
            "data-group": group.key,
            "data-forked-usd": String(group.forkedUsd),
            "data-unforked-usd": String(group.unforkedUsd),
          },
          h("td", {}, group.title),
          h("td", { class: "num" }, String(group.runs)),
          h("td", { class: "num" }, formatUsd(group.forkedUsd)),
          h("td", { class: "num" }, formatUsd(group.unforkedUsd)),
          h(
            "td",
            { class: "num" },
            group.unforkedUsd > 0 ? formatPercent(1 - group.forkedUsd / group.unforkedUsd) : "–",
          ),
        );
      }),
    );
    setText(
      this.#root.querySelector("#cost-total")!,
      groups.length === 0
        ? ""
        : `All groups: ${formatUsd(forked)} forked, ${formatUsd(unforked)} without forking${unforked > 0 ? ` — ${formatPercent(1 - forked / unforked)} saved` : ""}.`,
    );
  }
}
