// The "done when": `forkd demo --web` serves a page that follows the five demo children live
// to the bill. The real CLI process, its own nats-server with WebSocket, headless chromium.
/// <reference lib="dom" />
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, spawnCli } from "../cli/support.js";
import { launchChromium } from "../harness/browser.js";

const ARTIFACTS = fileURLToPath(new URL("../../reports/web/", import.meta.url));
let browser: Browser;

beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe("forkd demo --web", () => {
  it("follows the five children live to the bill, and the page's cost is the bill's", async () => {
    const demo = spawnCli(["demo", "--web", "--web-port", "0", "--json", "--tps", "150"], {
      env: cleanEnv(),
    });
    try {
      const announced = await demo.waitForLine((line) => line.startsWith("web view: "), {
        stream: "stderr",
        timeoutMs: 60_000,
      });
      const url = /web view: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(announced)![1]!;
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(url);
      await page.waitForSelector('#app[data-connection="connected"][data-controls="none"]');
      // Live: children seen running, then all five completed, under the demo's parent.
      await page.waitForSelector('.line.run[data-status="running"]');
      await page.waitForFunction(
        () => document.querySelectorAll('.line.run[data-status="completed"]').length === 5,
        undefined,
        { timeout: 60_000 },
      );
      expect(
        await page.$$eval(".line.group", (groups) => groups.map((g) => g.getAttribute("data-group"))),
      ).toEqual(["forkd-demo"]);
      await page.screenshot({ path: `${ARTIFACTS}demo-runs.png` });

      // The bill, then the page stays up.
      await demo.waitForLine((line) => line.startsWith("the web view stays up at"), {
        stream: "stderr",
        timeoutMs: 60_000,
      });
      const bill = JSON.parse(demo.stdout()) as { children: { cost_usd: number; status: string }[] };
      expect(bill.children.map((child) => child.status)).toEqual(Array(5).fill("completed"));
      const billed = bill.children.reduce((sum, child) => sum + child.cost_usd, 0);
      await page.keyboard.press("2");
      const forked = Number(
        await page.getAttribute('#cost-table tr[data-group="forkd-demo"]', "data-forked-usd"),
      );
      const unforked = Number(
        await page.getAttribute('#cost-table tr[data-group="forkd-demo"]', "data-unforked-usd"),
      );
      expect(forked).toBeCloseTo(billed, 6);
      expect(unforked).toBeGreaterThan(forked);
      await page.screenshot({ path: `${ARTIFACTS}demo-costs.png` });
      await page.close();
      expect(await demo.stop("SIGINT")).toEqual({ code: 0, signal: null });
    } finally {
      await demo.stop("SIGKILL");
    }
  });
});
