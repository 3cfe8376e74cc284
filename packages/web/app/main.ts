// The page: reads /config.json, connects to NATS over WebSocket, follows events and registries, and
// renders the runs, the opened run, costs and daemons. Keyboard: / search, 1-3 tabs, arrows or j/k
// move, Enter opens a run, Escape closes it.
import type { WebPageConfig } from "../src/config.js";
import { CostsView } from "./costs-view.js";
import { DaemonsView } from "./daemons-view.js";
import { byId, setText } from "./dom.js";
import { Feeds } from "./feeds.js";
import { PageModel } from "./model.js";
import { RunDetail } from "./run-detail.js";
import { RunsView } from "./runs-view.js";

const TABS = ["runs", "costs", "daemons"] as const;
type Tab = (typeof TABS)[number];

const app = byId("app");

function setConnection(state: string, text: string): void {
  app.dataset.connection = state;
  setText(byId("conn"), text);
}

function showTab(tab: Tab): void {
  for (const name of TABS) {
    const selected = name === tab;
    byId(`tab-${name}`).setAttribute("aria-selected", String(selected));
    byId(`tab-${name}`).tabIndex = selected ? 0 : -1;
    byId(`view-${name}`).hidden = !selected;
  }
  app.dataset.tab = tab;
}

async function main(): Promise<void> {
  setConnection("loading", "loading settings…");
  const config = (await (await fetch("config.json", { cache: "no-store" })).json()) as WebPageConfig;
  setText(byId("prefix"), config.prefix);
  setConnection("connecting", `connecting to ${config.servers.join(", ")}…`);
  const feeds = await Feeds.connect(config);
  const who = config.user === undefined ? "" : ` as ${config.user}`;
  setConnection("connected", `connected${who} to ${feeds.nc.getServer()}`);
  void (async () => {
    for await (const status of feeds.nc.status()) {
      if (status.type === "disconnect") setConnection("reconnecting", "disconnected; reconnecting…");
      else if (status.type === "reconnect")
        setConnection("connected", `connected${who} to ${feeds.nc.getServer()}`);
    }
  })();
  void feeds.nc
    .closed()
    .then((error) => setConnection("closed", `connection closed${error ? `: ${error.message}` : ""}`));

  const model = new PageModel();
  const detail = new RunDetail(model, feeds, byId("run-detail"), () => {
    detail.closeRun();
    app.dataset.detail = "closed";
    runs.focus();
  });
  const runs = new RunsView(model, byId("run-list"), byId("runs-empty"), (runId) => {
    detail.open(runId);
    app.dataset.detail = "open";
  });
  const costs = new CostsView(model, byId("view-costs"));
  const daemons = new DaemonsView(model, byId("daemon-table").querySelector("tbody")!);

  // Many events arrive per frame while runs stream: render at most once a frame.
  let scheduled = false;
  const changed = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      render(false);
    });
  };
  const render = (tick: boolean) => {
    runs.refresh(tick);
    detail.refresh();
    const counts = model.counts();
    setText(
      byId("summary"),
      [...counts].map(([status, count]) => `${count} ${status}`).join(" · ") || "no runs yet",
    );
    if (app.dataset.tab === "costs") costs.refresh();
    if (app.dataset.tab === "daemons") daemons.refresh();
    setText(byId("daemon-count"), String(model.daemons.size));
  };
  // Elapsed times and heartbeat ages move with the clock.
  setInterval(() => render(true), 1000);

  const search = byId<HTMLInputElement>("search");
  const status = byId<HTMLSelectElement>("status-filter");
  const filter = () => runs.setFilter({ text: search.value, status: status.value });
  search.addEventListener("input", filter);
  status.addEventListener("change", filter);
  for (const tab of TABS) {
    byId(`tab-${tab}`).addEventListener("click", () => {
      showTab(tab);
      render(false);
    });
  }
  byId("tablist").addEventListener("keydown", (event) => {
    const at = TABS.indexOf((app.dataset.tab ?? "runs") as Tab);
    const to = event.key === "ArrowRight" ? at + 1 : event.key === "ArrowLeft" ? at - 1 : undefined;
    if (to === undefined) return;
    const tab = TABS[(to + TABS.length) % TABS.length]!;
    showTab(tab);
    byId(`tab-${tab}`).focus();
    render(false);
  });
  document.addEventListener("keydown", (event) => {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement;
    if (event.key === "Escape") {
      if (typing) (event.target as HTMLElement).blur();
      else if (detail.runId !== undefined) {
        detail.closeRun();
        app.dataset.detail = "closed";
      }
      runs.focus();
      return;
    }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "/") {
      event.preventDefault();
      search.focus();
    } else if (event.key === "1" || event.key === "2" || event.key === "3") {
      showTab(TABS[Number(event.key) - 1]!);
      render(false);
    } else if (event.key === "l" && detail.runId !== undefined) {
      detail.focus();
    }
  });
  showTab("runs");
  render(false);

  void feeds.followRuns(model, changed);
  void feeds.followDaemons(model, changed);
  void feeds.followEvents(model, changed, (line) => setText(byId("notice"), line));
  // What the credentials permit, said on the page so that tests (and people) can tell "no abort
  // button" from "not known yet".
  // Daemons refuse an abort without the owner's proof, so a page without the owner key gets no
  // button even when its credentials may publish one.
  const mayAbort = config.ownerKey !== undefined && (await feeds.mayAbort());
  app.dataset.controls = mayAbort ? "abort" : "none";
  detail.setMayAbort(mayAbort);
}

main().catch((error: unknown) => {
  setConnection("failed", `cannot connect: ${(error as Error).message}`);
});
