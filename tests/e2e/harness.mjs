// Shared pieces of the end-to-end tests: serve dist/ on 127.0.0.1, launch Debian's Chromium through
// playwright-core (it never downloads a browser), collect every console error, page error and worker
// error, and watch for any request that leaves the page's own origin.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import net from "node:net";
import assert from "node:assert/strict";
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

/** Serves `dir` on 127.0.0.1 with Python's static server; resolves once it answers. The page's
 *  build, `dist/`, may be replaced by another with ORTHOSCOPE_DIST (a build made elsewhere, so that
 *  dist/ is left alone). */
export async function serve(dir) {
  if (process.env.ORTHOSCOPE_DIST && resolve(dir) === resolve(ROOT, "dist")) dir = resolve(process.env.ORTHOSCOPE_DIST);
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

/** Chromium's WebGPU on SwiftShader, its software Vulkan: a fallback adapter, which the page uses
 *  only with `?gpu=1`. Without these flags (and with --disable-gpu) the page has no adapter. */
export const WEBGPU_FLAGS = ["--enable-unsafe-webgpu", "--enable-unsafe-swiftshader", "--use-webgpu-adapter=swiftshader"];

/** Launches Chromium with a fresh profile (and `extraFlags`: WEBGPU_FLAGS drop --disable-gpu);
 *  returns the context, a page, and the error log. */
export async function launch(baseUrl, extraFlags = []) {
  const profile = mkdtempSync(join(tmpdir(), "orthoscope-e2e-"));
  const flags = extraFlags.length ? FLAGS.filter((f) => f !== "--disable-gpu").concat(extraFlags) : FLAGS;
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: flags,
    viewport: { width: 1200, height: 1600 },
  });
  const errors = [];
  const foreignRequests = [];
  /** Every request the page and its workers made: {method, url}. */
  const requests = [];
  const origin = new URL(baseUrl).origin;
  const watch = (page) => {
    page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
    page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
    page.on("worker", (w) => {
      w.on("console", (m) => { if (m.type() === "error") errors.push(`worker console: ${m.text()}`); });
    });
    page.on("request", (r) => {
      const u = r.url();
      requests.push({ method: r.method(), url: u });
      if (!u.startsWith(origin) && !u.startsWith("data:") && !u.startsWith("blob:")) foreignRequests.push(u);
    });
  };
  context.on("page", watch);
  const page = context.pages()[0] ?? (await context.newPage());
  watch(page);
  return {
    context, page, errors, foreignRequests, requests, origin,
    close: async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); },
  };
}

/** Fails on any console, page or worker error, on any request that left the page's origin, and
 *  on any request that is not a GET of one of the page's own static files (the page, its scripts,
 *  wasm and styles): the README's privacy promise for a page given local files. */
export function assertClean(b) {
  assert.deepEqual(b.errors, [], "console, page or worker errors");
  assert.deepEqual(b.foreignRequests, [], "requests outside the page's origin");
  assert.deepEqual(staticViolations(b), [], "requests other than GETs of the page's own static files");
}

/** The requests of session `b` that are not GETs of the page's own static files. */
export function staticViolations(b) {
  return b.requests.filter(({ method, url }) => {
    if (url.startsWith("data:") || url.startsWith("blob:")) return false;
    if (!url.startsWith(b.origin + "/")) return true;
    const path = new URL(url).pathname;
    return method !== "GET" || !/(\/|\.(html|js|wasm|css))$/.test(path);
  }).map(({ method, url }) => `${method} ${url}`);
}

/** The run id on the report element (`data-run`), to tell the next result from this one. */
export async function currentRun(page) {
  return Number(await page.getAttribute('[data-testid="report"]', "data-run"));
}

/** Waits for the report element to reach a final status for a run after `afterRun` (if given);
 *  returns {status, report, text, run}. */
export async function finalReport(page, timeout = 600_000, afterRun = -1) {
  await page.waitForFunction(
    (after) => {
      const el = document.querySelector('[data-testid="report"]');
      if (!el || Number(el.getAttribute("data-run")) <= after) return false;
      const s = el.getAttribute("data-status");
      return s === "done" || s === "error" || s === "choose";
    },
    afterRun,
    { timeout, polling: 100 },
  );
  return page.$eval('[data-testid="report"]', (el) => ({
    run: Number(el.getAttribute("data-run")),
    status: el.getAttribute("data-status"),
    report: el.getAttribute("data-report") ? JSON.parse(el.getAttribute("data-report")) : null,
    text: el.textContent,
  }));
}

import { execFileSync } from "node:child_process";
import { mkdirSync, existsSync, writeFileSync } from "node:fs";

export const OUT = join(ROOT, "tests/e2e/out");
const CLI = join(ROOT, "target/release/orthoscope");
/** The same CLI with the fixture writers (cargo feature `fixtures`), a test tool never shipped. */
const FIXTURE_CLI = join(ROOT, "target/release/orthoscope-fixtures");
/** Subcommands only the fixture CLI has. */
const FIXTURE_COMMANDS = new Set([
  "generate-sparse", "generate-shards", "generate-gguf", "generate-torch", "generate-npz", "generate-mlx", "hostile", "corpus",
]);

/** Runs the native CLI (built by scripts/test.sh) and returns stdout; fixture writers run from
 *  `orthoscope-fixtures` (`cargo build --release --features fixtures --bin orthoscope-fixtures`). */
export function cli(...args) {
  const bin = FIXTURE_COMMANDS.has(args[0]) ? FIXTURE_CLI : CLI;
  if (!existsSync(bin)) {
    const build = bin === CLI ? "--bin orthoscope" : "--features fixtures --bin orthoscope-fixtures";
    throw new Error(`${bin} is missing: run cargo build --release ${build}`);
  }
  return execFileSync(bin, args, { encoding: "utf8", maxBuffer: 64 << 20 });
}

/** A generated fixture under tests/e2e/out, made once by the CLI's `generate` command. */
export function fixture(name, ...generateArgs) {
  mkdirSync(OUT, { recursive: true });
  const path = join(OUT, name);
  if (!existsSync(path)) cli("generate", path, ...generateArgs);
  return path;
}

/** The CLI's Report for a file (same core, native build). */
export function cliReport(...args) {
  return JSON.parse(cli("analyze", ...args, "--json"));
}

/** Opens the app, waits for the opening demo to finish, and returns the session. */
export async function openApp(server, query = "", extraFlags = []) {
  const b = await launch(server.url, extraFlags);
  await b.page.goto(server.url + query);
  await finalReport(b.page);
  return b;
}

/** Sets files on the contract's file input and waits for the final status. */
export async function analyseFiles(page, files, timeout = 600_000) {
  const before = await currentRun(page);
  await page.setInputFiles('[data-testid="file-input"]', files);
  return finalReport(page, timeout, before);
}

/** Writes a safetensors file of F32 matrices filled from a seeded generator (for multi-tensor cases
 *  the CLI's `generate` does not make). `tensors`: [{name, rows, dim, shift}] — `shift` adds a
 *  common offset to every entry, which moves μ away from 0. */
export function writeSafetensors(path, tensors, seed = 1) {
  let s = BigInt(seed) * 0x9E3779B97F4A7C15n & 0xFFFFFFFFFFFFFFFFn;
  const next = () => {
    s ^= s << 13n; s &= 0xFFFFFFFFFFFFFFFFn; s ^= s >> 7n; s ^= s << 17n; s &= 0xFFFFFFFFFFFFFFFFn;
    return Number(s >> 11n) / 2 ** 53;
  };
  const header = {};
  const datas = [];
  let offset = 0;
  for (const t of tensors) {
    const data = new Float32Array(t.rows * t.dim);
    for (let i = 0; i < data.length; i++) data[i] = next() - 0.5 + (t.shift ?? 0);
    header[t.name] = { dtype: "F32", shape: [t.rows, t.dim], data_offsets: [offset, offset + data.byteLength] };
    offset += data.byteLength;
    datas.push(Buffer.from(data.buffer));
  }
  let json = Buffer.from(JSON.stringify(header));
  const pad = (8 - (json.length % 8)) % 8;
  json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(path, Buffer.concat([len, json, ...datas]));
  return path;
}

/** Writes a NumPy .npy (format 1.0, little-endian float32, C order) of a seeded matrix. */
export function writeNpy(path, rows, dim, seed = 1) {
  let s = seed >>> 0 || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32 - 0.5; };
  const data = new Float32Array(rows * dim);
  for (let i = 0; i < data.length; i++) data[i] = next() + (i % dim === 0 ? 0.3 : 0);
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows}, ${dim}), }`;
  const total = 10 + header.length + 1;
  header += " ".repeat((64 - (total % 64)) % 64) + "\n";
  const pre = Buffer.alloc(10);
  Buffer.from([0x93]).copy(pre, 0);
  pre.write("NUMPY", 1, "latin1");
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  writeFileSync(path, Buffer.concat([pre, Buffer.from(header, "latin1"), Buffer.from(data.buffer)]));
  return path;
}

/** The Benchmark answer (peak f32x4 loop, Gram kernels) of a fresh worker of one build, started in
 *  the page from its `<meta>` address ("orthoscope-worker" or "orthoscope-worker-relaxed"); used by
 *  the kernel test and scripts/bench.sh. */
export async function workerBenchmark(page, meta, peakIterations) {
  return page.evaluate(async ([meta, peakIterations]) => {
    const worker = new Worker(document.querySelector(`meta[name="${meta}"]`).content);
    try {
      return await new Promise((resolve, reject) => {
        worker.onerror = (e) => reject(new Error(e.message));
        worker.onmessage = (e) => {
          const { response } = JSON.parse(e.data);
          if (response === "Ready") {
            const request = { Benchmark: { peak_iterations: peakIterations, dim: 4096, rows: 512 } };
            worker.postMessage({ json: JSON.stringify(request) });
          } else if (response.Benchmark) resolve(response.Benchmark);
        };
      });
    } finally { worker.terminate(); }
  }, [meta, peakIterations]);
}

/** Runs in the page before its own scripts: keeps, in the order the page's event loop sees them,
 *  every message an analysis worker posts ({worker, run, kind}, with `rows_seen`, `rows` and
 *  `fraction` for Progress), every worker error event ({worker, kind: "error"}) and every change of
 *  the report element's state ({status, run}), each with its `performance.now()` time `t`. Ordering
 *  asserts read the log's order, not its times; the times give latencies to print.
 *  The page sets a status in the same turn as the message that caused it (its effects run as
 *  microtasks), so the log shows which message a status followed. */
function installPageLog() {
  const log = (window.__orthoscopeLog = []);
  const Native = window.Worker;
  let nextWorker = 0;
  window.Worker = class extends Native {
    constructor(...args) {
      super(...args);
      const worker = nextWorker++;
      // Registered before the page sets its own handlers, so each entry precedes what it causes.
      this.addEventListener("message", (e) => {
        const json = typeof e.data === "string" ? e.data : e.data?.json;
        let envelope;
        try { envelope = JSON.parse(json); } catch { return; }
        const { run, response } = envelope;
        const kind = typeof response === "string" ? response : Object.keys(response ?? {})[0];
        const entry = { worker, run, kind, t: performance.now() };
        if (kind === "Progress") Object.assign(entry, { rows_seen: response.Progress.rows_seen, rows: response.Progress.rows, fraction: response.Progress.fraction });
        if (kind === "Verdict") Object.assign(entry, { blocks: response.Verdict.blocks, from_helpers: response.Verdict.blocks_from_helpers });
        if (kind === "SampleDots") Object.assign(entry, { blocks: response.SampleDots.blocks.length });
        log.push(entry);
      });
      this.addEventListener("error", () => log.push({ worker, kind: "error", t: performance.now() }));
    }
  };
  // Clicks on Cancel and Stop here, for the latency from the click to what it caused.
  addEventListener("click", (e) => {
    const el = e.target.closest?.('[data-testid="cancel"], [data-testid="stop-early"]');
    if (el) log.push({ click: el.getAttribute("data-testid"), t: performance.now() });
  }, true);
  let last = "";
  const record = () => {
    const el = document.querySelector('[data-testid="report"]');
    if (!el) return;
    const state = { status: el.getAttribute("data-status"), run: Number(el.getAttribute("data-run")) };
    const key = `${state.status}/${state.run}`;
    if (key !== last) { last = key; log.push({ ...state, t: performance.now() }); }
  };
  new MutationObserver(record).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-status", "data-run"] });
}

/** Opens the app with the page log of [`installPageLog`] and waits for the opening demo to finish. */
export async function openAppWithLog(server, query = "", extraFlags = []) {
  const b = await launch(server.url, extraFlags);
  await b.context.addInitScript(installPageLog);
  await b.page.goto(server.url + query);
  await finalReport(b.page);
  return b;
}

/** The page log so far (see `installPageLog`). */
export async function pageLog(page) {
  return page.evaluate(() => window.__orthoscopeLog.slice());
}

/** Workers that posted anything about run `run`. */
export function workersOf(log, run) {
  return [...new Set(log.filter((e) => "worker" in e && e.run === run).map((e) => e.worker))];
}

/** Waits until `workers` distinct workers have posted progress of run `run`. */
export async function progressFrom(page, run, workers) {
  await page.waitForFunction(([run, workers]) => {
    const from = new Set(window.__orthoscopeLog.filter((e) => e.run === run && e.kind === "Progress").map((e) => e.worker));
    return from.size >= workers;
  }, [run, workers], { timeout: 60_000, polling: 50 });
}

/** Waits until every worker that posted anything about run `run` has acknowledged its Cancel. */
export async function cancelAcknowledged(page, run) {
  await page.waitForFunction((run) => {
    const log = window.__orthoscopeLog;
    const workers = new Set(log.filter((e) => "worker" in e && e.run === run).map((e) => e.worker));
    return workers.size > 0 && [...workers].every((w) => log.some((e) => e.worker === w && e.run === run && e.kind === "Cancelled"));
  }, run, { timeout: 60_000, polling: 50 });
}

/** Asserts from the page log that Cancel stopped run `run` mid-pass and at once: the page showed
 *  "cancelled" while the rows seen (summed over the workers, as the progress bar does) were still
 *  below the total; every worker of the run acknowledged the Cancel after the click and posted
 *  nothing more about the run; no worker finished it and the page never showed it done; the next
 *  run started after the cancel and finished. */
export function assertCancelledMidPass(log, run) {
  const statuses = log.filter((e) => "status" in e);
  assert.deepEqual(statuses.filter((e) => e.run === run).map((e) => e.status), ["running", "cancelled"], `states of run ${run}`);
  const cancelledAt = log.findIndex((e) => e.status === "cancelled" && e.run === run);
  const latest = new Map();
  for (const e of log.slice(0, cancelledAt)) if (e.run === run && e.kind === "Progress") latest.set(e.worker, e);
  assert.ok(latest.size > 0, "progress of the run was shown before the cancel");
  const seen = [...latest.values()].reduce((s, e) => s + e.rows_seen, 0);
  const total = Math.max(...[...latest.values()].map((e) => e.rows));
  assert.ok(seen < total, `cancelled after ${seen} of ${total} rows: mid-pass`);
  const workers = workersOf(log, run);
  for (const w of workers) {
    const ack = log.findIndex((e) => e.worker === w && e.run === run && e.kind === "Cancelled");
    assert.ok(ack > cancelledAt, `worker ${w} acknowledged the Cancel of run ${run} after the click`);
    const after = log.slice(ack + 1).filter((e) => e.worker === w && e.run === run);
    assert.deepEqual(after, [], `worker ${w} posted nothing about run ${run} after acknowledging its Cancel`);
  }
  assert.ok(!log.some((e) => e.run === run && e.kind === "Done"), `no worker finished run ${run}`);
  const next = statuses.findIndex((e) => e.run > run);
  assert.ok(next >= 0 && log.indexOf(statuses[next]) > cancelledAt, "the next run started after the cancel");
  assert.equal(statuses.at(-1).status, "done", "and the next run finished");
  // Latencies from the click (printed, not asserted: timings are the benchmark's business).
  const click = log.slice(0, cancelledAt).findLast((e) => e.click === "cancel");
  assert.ok(click, "the Cancel click is in the log");
  const shownMs = log[cancelledAt].t - click.t;
  const ackMs = Math.max(...workers.map((w) => log.find((e) => e.worker === w && e.run === run && e.kind === "Cancelled").t)) - click.t;
  return { seen, total, workers, shownMs, ackMs };
}
