// Shared pieces of the end-to-end tests: serve dist/ on 127.0.0.1, launch Debian's Chromium through
// playwright-core (it never downloads a browser), collect every console error, page error and worker
// error, and watch for any request that leaves the page's own origin.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";
import { chromium } from "playwright-core";

export const ROOT = new URL("../../", import.meta.url).pathname;

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

/** Serves `dir` on 127.0.0.1 with Python's static server; resolves once it answers. */
export async function serve(dir) {
  const port = await freePort();
  const proc = spawn("python3", ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", dir], {
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(url);
      if (r.ok) return { url, close: () => proc.kill() };
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill();
  throw new Error("static server did not start");
}

const FLAGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

/** Launches Chromium with a fresh profile; returns the context, a page, and the error log. */
export async function launch(baseUrl) {
  const profile = mkdtempSync(join(tmpdir(), "orthoscope-e2e-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width: 1200, height: 1600 },
  });
  const errors = [];
  const foreignRequests = [];
  const origin = new URL(baseUrl).origin;
  const watch = (page) => {
    page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
    page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
    page.on("worker", (w) => {
      w.on("console", (m) => { if (m.type() === "error") errors.push(`worker console: ${m.text()}`); });
    });
    page.on("request", (r) => {
      const u = r.url();
      if (!u.startsWith(origin) && !u.startsWith("data:") && !u.startsWith("blob:")) foreignRequests.push(u);
    });
  };
  context.on("page", watch);
  const page = context.pages()[0] ?? (await context.newPage());
  watch(page);
  return {
    context, page, errors, foreignRequests,
    close: async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); },
  };
}

/** Waits for the report element to reach a final status; returns {status, report, text}. */
export async function finalReport(page, timeout = 600_000) {
  await page.waitForSelector('[data-testid="report"][data-status="done"], [data-testid="report"][data-status="error"]', { timeout });
  return page.$eval('[data-testid="report"]', (el) => ({
    status: el.getAttribute("data-status"),
    report: el.getAttribute("data-report") ? JSON.parse(el.getAttribute("data-report")) : null,
    text: el.textContent,
  }));
}
