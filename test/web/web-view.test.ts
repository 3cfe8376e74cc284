// The web view in a real browser: headless chromium (the system's, driven by playwright-core) loads
// the page from `startWebServer`, the page connects to a real nats-server over WebSocket with the
// observer's credentials from deploy/nats/accounts.conf, and daemons run forks against the
// simulator. It must show the forks appear, stream and finish, replay an opened run's log in order,
// and offer no abort button to an observer — while a parent's credentials get one that works.
/// <reference lib="dom" />
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type NatsForkHandle, NatsForkSubagent, readEventLog } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import type { RunningDaemon } from "@forkd/daemon";
import type { ForkEvent } from "@forkd/protocol";
import { newSecret } from "@forkd/protocol/internal";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { type RunningWebServer, startWebServer } from "@forkd/web";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyEnv, passwordEnv, readRepoFile, TEST_PASSWORDS } from "../deploy/support.js";
import { launchChromium } from "../harness/browser.js";
import { startSimDaemon } from "../harness/daemons.js";

/** Where the screenshots go (gitignored); docs/images holds the ones the docs show. */
const ARTIFACTS = fileURLToPath(new URL("../../reports/web/", import.meta.url));
const PARENT = "parent-web-test";

let server: NatsServerHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let workspace: string;
const daemons: RunningDaemon[] = [];
let observerPage: RunningWebServer;
let parentPage: RunningWebServer;
let daemonPage: RunningWebServer;
let browser: Browser;
let restoreEnv: () => void;
const ownerKey = newSecret();

beforeAll(async () => {
  restoreEnv = applyEnv(passwordEnv());
  await mkdir(ARTIFACTS, { recursive: true });
  workspace = await mkdtemp(join(tmpdir(), "forkd-web-"));
  // deploy/nats/accounts.conf lets only the observer in over WebSocket; these tests also drive a page
  // that aborts, so the parent gets WEBSOCKET the way docs/web.md tells an installation to.
  const accounts = readRepoFile("deploy/nats/accounts.conf");
  const parentOnlyStandard = 'permissions: $FORKD_PARENT_PERMISSIONS, allowed_connection_types: ["STANDARD"]';
  expect(accounts).toContain(parentOnlyStandard);
  const config = accounts.replace(
    parentOnlyStandard,
    'permissions: $FORKD_PARENT_PERMISSIONS, allowed_connection_types: ["STANDARD", "WEBSOCKET"]',
  );
  [server, sim, browser] = await Promise.all([
    startNatsServer({ name: "web-view", config, websocket: true }),
    startSim({ latency: { ttftMs: 150, tokensPerSecond: 200 } }),
    launchChromium(),
  ]);
  nc = await connect({ servers: server.url, user: "parent", pass: TEST_PASSWORDS.parent });
  forks = await NatsForkSubagent.create(nc, { ownerKey });
  for (const id of ["web-a", "web-b"]) {
    daemons.push(
      await startSimDaemon({
        id,
        natsUrl: server.url,
        simUrl: sim.url,
        apiKey: "sk-forkd-web",
        workspace,
        config: {
          nats: { servers: [server.url], user: "daemon", pass: TEST_PASSWORDS.daemon },
          heartbeatMs: 1000,
        },
      }),
    );
  }
  const servers = [server.websocketUrl!];
  [observerPage, parentPage, daemonPage] = await Promise.all([
    startWebServer({
      // With the owner key: the button is missing for want of permission, not of the key.
      page: { servers, prefix: "agent", user: "observer", pass: TEST_PASSWORDS.observer, ownerKey },
      port: 0,
    }),
    startWebServer({
      page: { servers, prefix: "agent", user: "parent", pass: TEST_PASSWORDS.parent, ownerKey },
      port: 0,
    }),
    startWebServer({
      page: { servers, prefix: "agent", user: "daemon", pass: TEST_PASSWORDS.daemon },
      port: 0,
    }),
  ]);
});

afterAll(async () => {
  await browser?.close();
  await Promise.allSettled([observerPage?.close(), parentPage?.close(), daemonPage?.close()]);
  for (const daemon of daemons) await daemon.stop({ graceMs: 0 }).catch(() => undefined);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
  if (workspace) await rm(workspace, { recursive: true, force: true });
  restoreEnv?.();
});

/** A page at 1280×800 that records layout shifts (not caused by input) from its first paint. */
async function openPage(url: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  (page as Page & { errors?: string[] }).errors = errors;
  await page.addInitScript(() => {
    const shifts = { total: 0 };
    (window as unknown as { layoutShift: typeof shifts }).layoutShift = shifts;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries() as (PerformanceEntry & {
        value: number;
        hadRecentInput: boolean;
      })[])
        if (!entry.hadRecentInput) shifts.total += entry.value;
    }).observe({ type: "layout-shift", buffered: true });
  });
  await page.goto(url);
  // Connected, and the permission probe has answered: from here on, a missing button means "not permitted".
  await page.waitForSelector('#app[data-connection="connected"][data-controls]');
  return page;
}

function pageErrors(page: Page): string[] {
  return (page as Page & { errors?: string[] }).errors ?? [];
}

const row = (runId: string, status?: string) =>
  `.line.run[data-run-id="${runId}"]${status === undefined ? "" : `[data-status="${status}"]`}`;

/** The seqs of the event rows in view, top to bottom. */
function seqsInView(page: Page): Promise<number[]> {
  return page.$$eval("#event-list .ev", (rows) =>
    rows
      .filter((element) => !(element as HTMLElement).hidden)
      .sort((a, b) => Number((a as HTMLElement).dataset.index) - Number((b as HTMLElement).dataset.index))
      .map((element) => Number((element as HTMLElement).dataset.seq)),
  );
}

/**
 * Waits until the opened run's log holds `count` events (a replay still filling follows its end, and
 * the log's consumer may be a frame behind the list's), then selects its first row with Home and
 * waits for that row: rows render on the next frame.
 */
async function toTopOfWholeLog(page: Page, count: number): Promise<void> {
  await page.waitForFunction(
    (expected) => document.getElementById("log-state")?.textContent === `${expected} events`,
    count,
  );
  await page.focus("#event-list");
  await page.keyboard.press("Home");
  await page.waitForSelector('#event-list .ev[data-seq="1"][aria-selected="true"]');
}

/** One child of the 4k fixture's turn, under the test's parent. */
async function forkOne(directive: string, label: string): Promise<NatsForkHandle> {
  const fixture = await loadFixture("4k");
  return forks.fork({
    prefix: createForkPrefix(fixture.request, fixture.response),
    parent: { agent_id: PARENT },
    directive,
    label,
  });
}

async function loggedEvents(runId: string): Promise<ForkEvent[]> {
  const events: ForkEvent[] = [];
  for await (const { event } of readEventLog(forks.resources, runId, { follow: false })) events.push(event);
  return events;
}

describe("forkd web in headless chromium", () => {
  it("an observer sees forks appear, stream and finish, replays a run's log in order, and gets no abort button", async () => {
    const page = await openPage(observerPage.url);
    expect(await page.getAttribute("#app", "data-controls")).toBe("none");
    const fixture = await loadFixture("4k");
    const handles = forks.fanOut(
      { prefix: createForkPrefix(fixture.request, fixture.response), parent: { agent_id: PARENT } },
      [
        // Long enough to be seen streaming: 300 tokens at 60 a second.
        { directive: "Stream a while.\n@sim tps 60\n@sim text 300", label: "streamer" },
        {
          directive: 'Look around.\n@sim tool Glob {"pattern":"*"}\n@sim turn\n@sim text 40',
          label: "tool user",
        },
        { directive: "Answer briefly.\n@sim text 30", label: "brief" },
      ],
      { warmFirst: true },
    );
    const [streamer, toolUser, brief] = handles as [NatsForkHandle, NatsForkHandle, NatsForkHandle];

    // Appear, and stream: the streamer's row says so while it runs, grouped under its parent.
    await page.waitForSelector(`.line.group[data-group="${PARENT}"]`);
    await page.waitForSelector(row(streamer.runId, "running"));
    await page.click(row(streamer.runId));
    await page.waitForSelector(`#run-detail[data-run-id="${streamer.runId}"]`);
    await page.waitForFunction(
      () =>
        (document.getElementById("stream-state")?.textContent ?? "").includes("streaming") &&
        (document.getElementById("stream-text")?.textContent ?? "").length > 20,
    );
    // Running, opened, and still no abort or stop button for an observer.
    expect(await page.getAttribute(row(streamer.runId), "data-status")).toBe("running");
    expect(await page.$("#abort-run")).toBeNull();
    expect(await page.$("#stop-run")).toBeNull();
    await page.screenshot({ path: join(ARTIFACTS, "run-streaming.png") });

    // Finish: every row completed, as the log says.
    for (const handle of handles) expect((await handle.result()).status).toBe("completed");
    for (const handle of [streamer, toolUser, brief])
      await page.waitForSelector(row(handle.runId, "completed"));

    // The opened run's log: every event of the stream, in order, from seq 1 (top) to the end (bottom).
    const logged = await loggedEvents(streamer.runId);
    await toTopOfWholeLog(page, logged.length);
    const top = await seqsInView(page);
    expect(top[0]).toBe(1);
    expect(top).toEqual(top.map((_, i) => i + 1));
    expect(await page.getAttribute('#event-list .ev[data-seq="1"]', "data-type")).toBe(logged[0]!.type);
    await page.keyboard.press("End");
    await page.waitForSelector(`#event-list .ev[data-seq="${logged.length}"][aria-selected="true"]`);
    const bottom = await seqsInView(page);
    expect(bottom.at(-1)).toBe(logged.length);
    expect(bottom).toEqual(bottom.map((_, i) => bottom[0]! + i));
    expect(await page.getAttribute(`#event-list .ev[data-seq="${logged.length}"]`, "data-type")).toBe(
      "completed",
    );
    expect(await page.textContent("#event-json")).toContain('"type": "completed"');

    // The tool user's log marks its tool call and result.
    const toolLog = await loggedEvents(toolUser.runId);
    await page.click(row(toolUser.runId));
    await toTopOfWholeLog(page, toolLog.length);
    await page.waitForSelector('#event-list .ev.m-tool[data-type="tool.call"]');
    await page.waitForSelector('#event-list .ev.m-tool[data-type="tool.result"]');
    await page.screenshot({ path: join(ARTIFACTS, "runs.png") });

    // Costs: the group's forked cost beside the cost without forking, which is higher.
    await page.keyboard.press("Escape");
    await page.keyboard.press("2");
    await page.waitForSelector(`#cost-table tr[data-group="${PARENT}"]`);
    const [forked, unforked] = await page.$$eval(`#cost-chart rect[data-group="${PARENT}"]`, (bars) =>
      bars.map((bar) => Number(bar.getAttribute("width"))),
    );
    expect(forked).toBeGreaterThan(0);
    expect(unforked).toBeGreaterThan(forked!);
    await page.screenshot({ path: join(ARTIFACTS, "costs.png") });

    // Daemons: both, healthy, with their slots.
    await page.keyboard.press("3");
    for (const id of ["web-a", "web-b"])
      await page.waitForSelector(`#daemon-table tr[data-daemon-id="${id}"][data-health="ok"]`);
    await page.screenshot({ path: join(ARTIFACTS, "daemons.png") });

    // Nothing moved while events streamed (input-caused shifts excluded, as the metric does).
    const shift = await page.evaluate(
      () => (window as unknown as { layoutShift: { total: number } }).layoutShift.total,
    );
    expect(shift).toBeLessThan(0.01);
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  it("a parent's credentials get an abort button that stops a running run, on every page", async () => {
    const [observer, parent] = await Promise.all([openPage(observerPage.url), openPage(parentPage.url)]);
    expect(await parent.getAttribute("#app", "data-controls")).toBe("abort");
    const handle = await forkOne("Take your time.\n@sim tps 20\n@sim text 2000", "to abort");
    await parent.waitForSelector(row(handle.runId, "running"));
    await parent.click(row(handle.runId));
    await observer.click(row(handle.runId));
    await parent.waitForSelector("#abort-run");
    await parent.waitForSelector("#stop-run");
    expect(await observer.$("#abort-run")).toBeNull();
    expect(await observer.$("#stop-run")).toBeNull();
    await parent.click("#abort-run");
    await parent.waitForSelector('#abort-run:text("Confirm abort")');
    await parent.click("#abort-run");
    expect((await handle.result()).status).toBe("killed");
    for (const page of [observer, parent]) {
      await page.waitForSelector(row(handle.runId, "aborted"));
      await page.waitForSelector('#event-list .ev[data-type="aborted"]');
    }
    expect(await parent.$("#abort-run")).toBeNull();
    expect(await parent.$("#stop-run")).toBeNull();
    expect([...pageErrors(observer), ...pageErrors(parent)]).toEqual([]);
    await Promise.all([observer.close(), parent.close()]);
  });

  it("a parent's stop button lets the model's turn finish and starts nothing new: the run ends completed, stopped", async () => {
    const parent = await openPage(parentPage.url);
    // Turn 1 streams for about 5 s and ends in a tool call; a stop meanwhile lets it finish, runs no
    // tool and starts no turn 2.
    const handle = await forkOne(
      'Write, then look.\n@sim tps 20\n@sim text 100\n@sim tool Glob {"pattern":"*"}\n@sim turn\n@sim text 20',
      "to stop",
    );
    await parent.waitForSelector(row(handle.runId, "running"));
    await parent.click(row(handle.runId));
    await parent.waitForSelector('#event-list .ev[data-type="llm.delta"]');
    await parent.click("#stop-run");
    await parent.waitForSelector('#stop-run:text("Confirm stop")');
    await parent.click("#stop-run");
    expect(await handle.result()).toMatchObject({
      status: "completed",
      result: { stop: "stopped", stop_reason: "stopped from forkd web" },
    });
    const logged = (await loggedEvents(handle.runId)).map((event) => event.type);
    expect(logged.filter((type) => type === "llm.request")).toHaveLength(1);
    expect(logged).not.toContain("tool.result");
    await parent.waitForSelector(row(handle.runId, "completed"));
    expect(await parent.$("#stop-run")).toBeNull();
    expect(pageErrors(parent)).toEqual([]);
    await parent.close();
  });

  it("keeps following across a restart of the NATS server", async () => {
    const page = await openPage(observerPage.url);
    await page.waitForSelector(".line.run");
    // The parent's connection says when it is back, as the page does.
    const parentBack = (async () => {
      for await (const status of nc.status()) if (status.type === "reconnect") return;
    })();
    await server.restart();
    await parentBack;
    await page.waitForSelector('#app[data-connection="connected"]');
    const handle = await forkOne("After the restart.\n@sim text 20", "after restart");
    expect((await handle.result()).status).toBe("completed");
    await page.waitForSelector(row(handle.runId, "completed"));
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  it("says why an opened run's log is not live for as long as it is not, and fills it once it can", async () => {
    const handle = await forkOne("A log opened while the server is down.\n@sim text 20", "log retried");
    expect((await handle.result()).status).toBe("completed");
    const logged = await loggedEvents(handle.runId);
    const page = await openPage(observerPage.url);
    await page.waitForSelector(row(handle.runId, "completed"));
    // Every text the log's state shows from here on, in order.
    await page.evaluate(() => {
      const texts: string[] = [];
      (window as unknown as { logStates: string[] }).logStates = texts;
      const state = document.getElementById("log-state")!;
      new MutationObserver(() => texts.push(state.textContent ?? "")).observe(state, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    const parentBack = (async () => {
      for await (const status of nc.status()) if (status.type === "reconnect") return;
    })();
    await server.kill();
    await page.click(row(handle.runId));
    // A second failed attempt comes a retry interval after the first: the page rendered in between
    // (it does every second), and the reason must still be what it shows.
    await page.waitForFunction(
      () =>
        /log unavailable \(attempt 2\): .+; retrying$/.test(
          document.getElementById("log-state")!.textContent!,
        ),
      undefined,
      { timeout: 60_000 },
    );
    const whileDown = await page.evaluate(() => (window as unknown as { logStates: string[] }).logStates);
    const firstProblem = whileDown.findIndex((text) => text.includes("log unavailable"));
    expect(firstProblem).toBeGreaterThanOrEqual(0);
    expect(whileDown.slice(firstProblem).filter((text) => !text.includes("log unavailable"))).toEqual([]);
    await server.restart();
    await parentBack;
    await page.waitForFunction(
      (expected) => document.getElementById("log-state")?.textContent === `${expected} events`,
      logged.length,
      { timeout: 60_000 },
    );
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  it("refuses a page the daemon's credentials, which deploy/nats keeps off the websocket listener", async () => {
    const page = await browser.newPage();
    await page.goto(daemonPage.url);
    await page.waitForSelector('#app[data-connection="failed"]');
    expect(await page.textContent("#conn")).toMatch(/cannot connect: .*authorization/i);
    await page.close();
  });

  it("reads on a phone: the opened run covers the list, nothing overflows sideways", async () => {
    const page = await openPage(observerPage.url, { width: 390, height: 844 });
    await page.waitForSelector(".line.run");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(ARTIFACTS, "phone-runs.png") });
    await page.focus("#run-list");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#run-detail[data-run-id]");
    // Any row of the log, not seq 1: the log follows its end, and when the whole replay arrives before
    // the first frame (a loaded machine) the streamer's first events are never drawn.
    await page.waitForSelector("#event-list .ev").catch(async (error: unknown) => {
      await page.screenshot({ path: join(ARTIFACTS, "phone-run-failed.png") });
      const state = await page.evaluate(() => ({
        run: document.querySelector<HTMLElement>("#run-detail")?.dataset.runId,
        log: document.querySelector("#log-state")?.textContent,
        rows: document.querySelectorAll("#event-list .ev").length,
        connection: document.querySelector<HTMLElement>("#app")?.dataset.connection,
      }));
      throw new Error(`the opened run's log shows no event: ${JSON.stringify(state)}`, { cause: error });
    });
    await page.screenshot({ path: join(ARTIFACTS, "phone-run.png") });
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });
});
