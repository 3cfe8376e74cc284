// Daemons from the registry: state, slots in use (load of capacity), heartbeat age and health.
import { h } from "./dom.js";
import type { PageModel } from "./model.js";
import { type DaemonInfo, formatAge } from "./shared.js";

/** A daemon whose entry was not refreshed for this long is shown as silent. @unit ms */
export const SILENT_AFTER_MS = 15_000;

/** `ok`, `draining`, `stopped` or `silent` (no heartbeat for {@link SILENT_AFTER_MS}). */
export function healthOf(info: DaemonInfo, now: number): string {
  if (info.state === "stopped") return "stopped";
  if (now - info.heartbeat_at > SILENT_AFTER_MS) return "silent";
  if (info.state === "draining") return "draining";
  return info.state === "starting" ? "starting" : "ok";
}

/** The daemons tab. */
export class DaemonsView {
  readonly #model: PageModel;
  readonly #body: HTMLElement;

  constructor(model: PageModel, body: HTMLElement) {
    this.#model = model;
    this.#body = body;
  }

  /** Renders the table (cheap: a cluster has tens of daemons, not thousands). */
  refresh(): void {
    const now = Date.now();
    const daemons = [...this.#model.daemons.values()].sort((a, b) => a.daemon_id.localeCompare(b.daemon_id));
    this.#body.replaceChildren(
      ...daemons.map((info) => {
        const health = healthOf(info, now);
        const share = info.capacity > 0 ? Math.min(1, info.load / info.capacity) : 0;
        return h(
          "tr",
          { "data-daemon-id": info.daemon_id, "data-health": health },
          h("td", {}, info.daemon_id),
          h("td", {}, info.host),
          h("td", {}, h("span", { class: `badge h-${health}` }, health)),
          h(
            "td",
            { class: "num" },
            h(
              "span",
              { class: "slots", "aria-label": `${info.load} of ${info.capacity} slots busy` },
              h("span", { class: "slots-fill", style: undefined, "data-share": share.toFixed(2) }),
            ),
            ` ${info.load}/${info.capacity}`,
          ),
          h("td", { class: "num" }, formatAge(now - info.heartbeat_at)),
          h("td", {}, info.version),
        );
      }),
    );
    // Inline styles are refused by the page's CSP; widths are set through the CSSOM instead.
    for (const fill of this.#body.querySelectorAll<HTMLElement>(".slots-fill")) {
      fill.style.width = `${Number(fill.dataset.share) * 100}%`;
    }
  }
}
