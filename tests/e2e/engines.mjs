// The page in the two engines besides Chromium that readers without WebGPU mostly use: Firefox ESR
// (Debian's firefox-esr, driven over WebDriver BiDi by puppeteer-core, which never downloads a
// browser) and WebKit, Safari's engine (Debian's WebKitGTK MiniBrowser, driven by WebKitWebDriver
// over classic WebDriver on an Xvfb display this module starts and stops). Both sessions offer the
// same small interface, so tests/e2e/engines.test.mjs runs one smoke in each.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join, isAbsolute, resolve } from "node:path";
import net from "node:net";
import { ROOT } from "./harness.mjs";

/** The site under test: `ORTHOSCOPE_ENGINES_DIST` or else `ORTHOSCOPE_DIST` (a path, absolute or
 *  from the repository root), by default the release build in dist/. */
export const DIST = (() => {
  const dir = process.env.ORTHOSCOPE_ENGINES_DIST ?? process.env.ORTHOSCOPE_DIST ?? "dist";
  return isAbsolute(dir) ? dir : resolve(ROOT, dir);
})();

export const FIREFOX = process.env.ORTHOSCOPE_FIREFOX ?? "/usr/bin/firefox-esr";
export const WEBKIT_DRIVER = process.env.ORTHOSCOPE_WEBKIT_DRIVER ?? "/usr/bin/WebKitWebDriver";
export const XVFB = "/usr/bin/Xvfb";

/** WebKitGTK's MiniBrowser (package libwebkit2gtk-4.1-0, pulled in by webkit2gtk-driver): under
 *  /usr/lib/<multiarch>/webkit2gtk-4.1/ (or 4.0, or webkitgtk-6.0 on newer Debian). */
export const MINIBROWSER = process.env.ORTHOSCOPE_MINIBROWSER ?? (() => {
  let arches = [];
  try { arches = readdirSync("/usr/lib").filter((d) => d.endsWith("-linux-gnu")); } catch {}
  for (const arch of arches) {
    for (const api of ["webkit2gtk-4.1", "webkitgtk-6.0", "webkit2gtk-4.0"]) {
      const p = join("/usr/lib", arch, api, "MiniBrowser");
      if (existsSync(p)) return p;
    }
  }
  return "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";
})();

/** Why the Firefox tests cannot run (a message for node:test's `skip`), or false when they can.
 *  Only a missing browser skips; a missing puppeteer-core (npm) fails. */
export function firefoxMissing() {
  if (!existsSync(FIREFOX)) return `${FIREFOX} is missing: apt-get install firefox-esr (scripts/install.sh does)`;
  return false;
}

/** Why the WebKit tests cannot run, or false when they can. Only a missing browser or driver skips;
 *  a missing Xvfb fails. */
export function webkitMissing() {
  for (const [bin, pkg] of [[WEBKIT_DRIVER, "webkit2gtk-driver"], [MINIBROWSER, "webkit2gtk-driver (libwebkit2gtk-4.1-0)"]]) {
    if (!existsSync(bin)) return `${bin} is missing: apt-get install ${pkg} (scripts/install.sh does)`;
  }
  return false;
}

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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Child processes to end if the test process exits without closing its session. */
const children = new Set();
process.on("exit", () => { for (const c of children) try { c.kill("SIGKILL"); } catch {} });
function track(proc) {
  children.add(proc);
  proc.on("exit", () => children.delete(proc));
  return proc;
}
function stop(proc) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => { try { proc.kill("SIGKILL"); } catch {} }, 3000);
    proc.once("exit", () => { clearTimeout(t); resolve(); });
    proc.kill("SIGTERM");
  });
}

/** Runs in the page once it has loaded: records every change of the report element's state
 *  ({status, run, shown: the last running ε on screen}, in order) in `window.__enginesLog`, and every error event, unhandled rejection
 *  and console.error in `window.__enginesErrors`. Installed the same way in both engines (classic
 *  WebDriver has no init scripts), so it sees what happens after the page's start. */
function installPageHooks() {
  if (window.__enginesLog) return;
  const log = (window.__enginesLog = []);
  const errors = (window.__enginesErrors = []);
  addEventListener("error", (e) => errors.push(`error: ${e.message}`));
  addEventListener("unhandledrejection", (e) => errors.push(`unhandledrejection: ${e.reason}`));
  const consoleError = console.error;
  console.error = (...args) => { errors.push(`console.error: ${args.join(" ")}`); consoleError.apply(console, args); };
  // When Cancel was clicked (page clock), to time the page's answer without the driver's round trips.
  addEventListener("click", (e) => { if (e.target.closest?.('[data-testid="cancel"]')) window.__enginesCancelAt = performance.now(); }, true);
  let last = "";
  // The last running ε the page showed ("running ε = … after N of M rows"), kept with each state.
  let shown = null;
  const record = () => {
    const el = document.querySelector('[data-testid="report"]');
    if (!el) return;
    const text = document.querySelector('[data-testid="running-epsilon"]')?.textContent ?? "";
    if (text.includes("running ε")) shown = text;
    const state = { status: el.getAttribute("data-status"), run: Number(el.getAttribute("data-run")), shown, at: performance.now() };
    const key = `${state.status}/${state.run}`;
    if (key !== last) { last = key; log.push(state); }
  };
  record();
  new MutationObserver(record).observe(document, {
    subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ["data-status", "data-run"],
  });
}

/** The report element's state: {run, status, report (parsed data-report or null), text}. */
function reportState() {
  const el = document.querySelector('[data-testid="report"]');
  if (!el) return null;
  const json = el.getAttribute("data-report");
  return { run: Number(el.getAttribute("data-run")), status: el.getAttribute("data-status"), report: json ? JSON.parse(json) : null, text: el.textContent };
}

/** What both sessions offer on top of their engine-specific primitives (`evaluate`, `setFile`,
 *  `click`, `screenshot`, `close`). */
class Session {
  /** Polls `fn(...args)` in the page until it returns something truthy; returns that. */
  async waitFor(fn, args = [], { timeout = 120_000, interval = 100, what = fn.name || "condition" } = {}) {
    const deadline = Date.now() + timeout;
    for (;;) {
      const v = await this.evaluate(fn, ...args);
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`${this.engine}: timed out after ${timeout} ms waiting for ${what}`);
      await sleep(interval);
    }
  }

  async goto(url) {
    await this.navigate(url);
    await this.waitFor(() => document.querySelector('[data-testid="report"]') !== null, [], { what: "the report element" });
    await this.evaluate(installPageHooks);
  }

  report() { return this.evaluate(reportState); }

  /** Waits for a final status (done, error, choose) of a run after `afterRun`. */
  async finalReport(afterRun = -1, timeout = 300_000) {
    await this.waitFor((after) => {
      const el = document.querySelector('[data-testid="report"]');
      if (!el || Number(el.getAttribute("data-run")) <= after) return false;
      return ["done", "error", "choose"].includes(el.getAttribute("data-status"));
    }, [afterRun], { timeout, what: `a final status after run ${afterRun}` });
    return this.report();
  }

  /** Opens `path` through the contract's file input and waits for its final status. */
  async analyseFile(path, timeout = 300_000) {
    const before = (await this.report()).run;
    await this.setFile('[data-testid="file-input"]', path);
    return this.finalReport(before, timeout);
  }

  pageLog() { return this.evaluate(() => window.__enginesLog.slice()); }
  async pageErrors() { return [...this.errors, ...(await this.evaluate(() => window.__enginesErrors?.slice() ?? []))]; }

  /** URLs of every resource the page fetched (Resource Timing) outside its origin. */
  foreignResources() {
    return this.evaluate(() => performance.getEntriesByType("resource").map((e) => e.name)
      .filter((u) => !u.startsWith(location.origin + "/") && !u.startsWith("data:") && !u.startsWith("blob:")));
  }

  /** Whether this engine's WebAssembly validates plain SIMD (f32x4.mul) and relaxed SIMD
   *  (f32x4.relaxed_madd, the page's own probe in src/worker/client.rs). */
  wasmFeatures() {
    return this.evaluate(() => {
      const head = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
      const simd = [...head, 0x01, 0x07, 0x01, 0x60, 0x02, 0x7b, 0x7b, 0x01, 0x7b, 0x03, 0x02, 0x01, 0x00,
        0x0a, 0x0b, 0x01, 0x09, 0x00, 0x20, 0x00, 0x20, 0x01, 0xfd, 0xe6, 0x01, 0x0b];
      const relaxed = [...head, 0x01, 0x08, 0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b, 0x01, 0x7b, 0x03, 0x02, 0x01, 0x00,
        0x0a, 0x0d, 0x01, 0x0b, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfd, 0x85, 0x02, 0x0b];
      return { simd128: WebAssembly.validate(new Uint8Array(simd)), relaxed: WebAssembly.validate(new Uint8Array(relaxed)) };
    });
  }
}

/** Firefox ESR over WebDriver BiDi (puppeteer-core), headless, with a fresh temporary profile.
 *  Console errors, page errors and every request (the page's and its workers') are collected from
 *  the protocol's events. */
export async function launchFirefox() {
  const { default: puppeteer } = await import("puppeteer-core");
  const browser = await puppeteer.launch({
    browser: "firefox", executablePath: FIREFOX, protocol: "webDriverBiDi", headless: true,
    defaultViewport: { width: 1200, height: 1600 },
  });
  const page = (await browser.pages())[0] ?? (await browser.newPage());
  const s = new Session();
  s.engine = `Firefox ${(await browser.version()).replace(/^firefox\//, "")}`;
  s.errors = [];
  s.requests = [];
  page.on("console", (m) => { if (m.type() === "error") s.errors.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => s.errors.push(`pageerror: ${e.message}`));
  page.on("request", (r) => s.requests.push({ method: r.method(), url: r.url() }));
  s.navigate = (url) => page.goto(url);
  s.evaluate = (fn, ...args) => page.evaluate(fn, ...args);
  s.setFile = async (selector, path) => (await page.$(selector)).uploadFile(path);
  s.click = (selector) => page.click(selector);
  s.screenshot = (path) => page.screenshot({ path, fullPage: true });
  s.close = () => browser.close();
  return s;
}

/** The W3C web element identifier's key. */
const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";

/** A classic WebDriver (W3C, HTTP + JSON) session, spoken with plain fetch. */
class WebDriver {
  constructor(base) { this.base = base; }
  async cmd(method, path, body) {
    const r = await fetch(this.base + path, { method, headers: { "content-type": "application/json; charset=utf-8" }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { throw new Error(`WebDriver ${method} ${path}: HTTP ${r.status} ${text.slice(0, 300)}`); }
    if (!r.ok) throw new Error(`WebDriver ${method} ${path}: ${json.value?.error}: ${json.value?.message}`);
    return json.value;
  }
  s(path) { return `/session/${this.id}${path}`; }
  async element(selector) {
    const v = await this.cmd("POST", this.s("/element"), { using: "css selector", value: selector });
    return v[ELEMENT];
  }
}

/** Starts Xvfb on a display it picks itself (-displayfd: no race for a free number); resolves with
 *  {proc, display}. */
async function startXvfb() {
  if (!existsSync(XVFB)) throw new Error(`${XVFB} is missing: apt-get install xvfb (scripts/install.sh does)`);
  const proc = track(spawn(XVFB, ["-displayfd", "3", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"], {
    stdio: ["ignore", "ignore", "pipe", "pipe"],
  }));
  let stderr = "";
  proc.stderr.on("data", (d) => { stderr += d; });
  const display = await new Promise((resolve, reject) => {
    let out = "";
    const t = setTimeout(() => reject(new Error(`Xvfb gave no display in 20 s: ${stderr}`)), 20_000);
    proc.stdio[3].on("data", (d) => {
      out += d;
      if (out.includes("\n")) { clearTimeout(t); resolve(`:${out.trim()}`); }
    });
    proc.on("exit", (code) => { clearTimeout(t); reject(new Error(`Xvfb exited (${code}): ${stderr}`)); });
    proc.on("error", (e) => { clearTimeout(t); reject(e); });
  });
  return { proc, display };
}

/** WebKitGTK's MiniBrowser under WebKitWebDriver, on a private Xvfb display. */
export async function launchWebKit() {
  const xvfb = await startXvfb();
  const port = await freePort();
  let driverLog = "";
  const driver = track(spawn(WEBKIT_DRIVER, [`--port=${port}`], {
    env: { ...process.env, DISPLAY: xvfb.display }, stdio: ["ignore", "pipe", "pipe"],
  }));
  driver.on("error", (e) => { driverLog += `${e}`; });
  driver.stdout.on("data", (d) => { driverLog += d; });
  driver.stderr.on("data", (d) => { driverLog += d; });
  const wd = new WebDriver(`http://127.0.0.1:${port}`);
  const cleanup = async () => { await stop(driver); await stop(xvfb.proc); };
  try {
    for (let i = 0; ; i++) {
      try { if ((await wd.cmd("GET", "/status")).ready) break; } catch {}
      if (i > 200 || driver.exitCode !== null) throw new Error(`WebKitWebDriver did not start: ${driverLog}`);
      await sleep(100);
    }
    const session = await wd.cmd("POST", "/session", {
      capabilities: { alwaysMatch: { browserName: "MiniBrowser", "webkitgtk:browserOptions": { binary: MINIBROWSER, args: ["--automation"] } } },
    });
    wd.id = session.sessionId;
    const s = new Session();
    s.engine = `WebKitGTK ${session.capabilities.browserVersion} (MiniBrowser)`;
    s.errors = [];
    s.navigate = (url) => wd.cmd("POST", wd.s("/url"), { url });
    s.evaluate = (fn, ...args) => wd.cmd("POST", wd.s("/execute/sync"), { script: `return (${fn}).apply(null, arguments);`, args });
    // Element Send Keys to a file input sets its files (strictFileInteractability is false).
    s.setFile = async (selector, path) => wd.cmd("POST", wd.s(`/element/${await wd.element(selector)}/value`), { text: path });
    // WebKitWebDriver scrolls an element into view itself, but when it has to, WebKitGTK 2.50 sends
    // the mouseup with click count 0 and no click event follows (seen on Cancel below the fold of
    // the running page). Scrolled into view first and rendered, the same click is a click.
    s.click = async (selector) => {
      const id = await wd.element(selector);
      await wd.cmd("POST", wd.s("/execute/async"), {
        script: "const [el, done] = arguments; el.scrollIntoView({ block: 'center' }); requestAnimationFrame(() => requestAnimationFrame(() => done()));",
        args: [{ [ELEMENT]: id }],
      });
      await wd.cmd("POST", wd.s(`/element/${id}/click`), {});
    };
    s.screenshot = async (path) => writeFileSync(path, Buffer.from(await wd.cmd("GET", wd.s("/screenshot")), "base64"));
    s.close = async () => {
      try { await wd.cmd("DELETE", wd.s("")); } catch {}
      await cleanup();
    };
    return s;
  } catch (e) {
    await cleanup();
    throw e;
  }
}
