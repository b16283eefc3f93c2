// End to end in Firefox ESR and in WebKit (Safari's engine, as WebKitGTK's MiniBrowser): readers
// without WebGPU are mostly on these two, so the CPU pass is smoke-tested there as well as in
// Chromium. In each engine: the page loads and its built-in demo finishes; a BF16 safetensors file
// opened through the file input gives the CLI's ε to 1e-7; Cancel mid-pass shows the cancelled
// state and no result of that run follows, and the next file still gives the CLI's ε. WebKit has no
// relaxed SIMD, so there the page must load the plain simd128 worker (Chromium loads the relaxed one:
// tests/e2e/app.test.mjs and kernel.test.mjs). The site under test is dist/, or the build named by
// ORTHOSCOPE_ENGINES_DIST (or ORTHOSCOPE_DIST). An engine whose browser is not installed is skipped,
// naming the package scripts/install.sh would install; anything else missing fails.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { serve, fixture, cliReport, staticViolations, OUT } from "./harness.mjs";
import { DIST, firefoxMissing, webkitMissing, launchFirefox, launchWebKit } from "./engines.mjs";

/** The opening demo: the matrix the CLI writes with these arguments (tests/e2e/app.test.mjs). */
const DEMO = ["demo-trained-like.safetensors", "--kind", "trained-like", "--rows", "16384", "--dim", "1024", "--seed", "1"];
/** The BF16 file of the ε check (shared with tests/e2e/kernel.test.mjs). */
const BF16 = ["kernel-4096x384-bf16.safetensors", "--rows", "4096", "--dim", "384", "--dtype", "BF16", "--seed", "8"];
/** The file the Cancel check stops: a few seconds of exact pass in either engine (1.5 times the
 *  demo's work), long enough to be cancelled mid-pass, short enough to wait out the time the whole
 *  pass would have taken. */
const LONG = { rows: 20000, dim: 1024 };
const LONG_FILE = [`random-${LONG.rows}x${LONG.dim}-bf16.safetensors`, "--kind", "random-init", "--rows", String(LONG.rows), "--dim", String(LONG.dim)];
/** A small file that must still give its exact result after the cancel. */
const SMALL = ["small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32"];
const TOLERANCE = 1e-7;

const cliCache = new Map();
/** Path of a generated fixture and the CLI's Report for it (each computed once per process). */
function withCli(args) {
  const path = fixture(...args);
  if (!cliCache.has(path)) cliCache.set(path, cliReport(path));
  return { path, want: cliCache.get(path) };
}

let server;
before(async () => { server = await serve(DIST); });
after(() => server?.close());

const ENGINES = [
  {
    name: "Firefox ESR (WebDriver BiDi, puppeteer-core)", tag: "firefox", missing: firefoxMissing(), launch: launchFirefox,
    // Firefox validates relaxed SIMD (ARCHITECTURE.md); the page must follow its own probe.
    kernel: (features) => (features.relaxed ? "relaxed-simd f32" : "simd128 f32"),
  },
  {
    name: "WebKit (WebKitGTK MiniBrowser, WebKitWebDriver, Xvfb)", tag: "webkit", missing: webkitMissing(), launch: launchWebKit,
    // Safari's engine rejects relaxed SIMD: only the plain build can run there.
    kernel: (features) => {
      assert.equal(features.relaxed, false, "WebKit validates no relaxed-SIMD instruction");
      return "simd128 f32";
    },
  },
];

/** Fails on page errors and on any request (Firefox: every request of the page and its workers;
 *  WebKit: the page's Resource Timing) outside the page's origin or other than a GET of its files. */
async function assertClean(s) {
  assert.deepEqual(await s.pageErrors(), [], `${s.engine}: console, page or worker errors`);
  assert.deepEqual(await s.foreignResources(), [], `${s.engine}: resources from outside the page's origin`);
  if (s.requests) {
    assert.deepEqual(staticViolations({ requests: s.requests, origin: new URL(server.url).origin }), [],
      `${s.engine}: requests other than GETs of the page's own static files`);
  }
}

for (const engine of ENGINES) {
  describe(engine.name, () => {
    let s;
    let features;
    /** The demo's Report.timing_ms in this engine: scales the wait after the cancel. */
    let demoMs;
    before(async () => {
      if (engine.missing) return;
      s = await engine.launch();
      console.log(`${engine.tag}: ${s.engine}, site ${DIST}`);
    });
    after(async () => { await s?.close(); });

    /** Opens the page and waits for the demo, unless an earlier test of this engine did. */
    async function opened() {
      if (demoMs === undefined) {
        await s.goto(server.url);
        const r = await s.finalReport();
        if (r.status === "done") demoMs = r.report.timing_ms;
        return r;
      }
      return null;
    }

    test("the page loads and the built-in demo finishes with its exact result in the kernel the engine supports", { skip: engine.missing, timeout: 180_000 }, async () => {
      const t0 = Date.now();
      const r = await opened();
      assert.equal(r.status, "done", r.text);
      features = await s.wasmFeatures();
      assert.equal(features.simd128, true, `${s.engine} validates wasm SIMD (f32x4)`);
      assert.equal(r.report.exact, true);
      assert.equal(r.report.class, "2");
      assert.equal(r.report.rows, 16384);
      assert.equal(r.report.kernel, engine.kernel(features), `${s.engine}: the worker build that ran`);
      const { want } = withCli(DEMO);
      assert.ok(Math.abs(r.report.epsilon - want.epsilon) <= TOLERANCE, `demo ε ${r.report.epsilon} vs CLI ${want.epsilon}`);
      console.log(`${engine.tag}: demo ε ${r.report.epsilon} (CLI ${want.epsilon}, Δ ${Math.abs(r.report.epsilon - want.epsilon).toExponential(1)}), ` +
        `kernel ${r.report.kernel} over ${r.report.workers} workers (hardwareConcurrency ${await s.evaluate(() => navigator.hardwareConcurrency)}), ` +
        `relaxed SIMD ${features.relaxed ? "validates" : "rejected"}, pass ${Math.round(r.report.timing_ms)} ms, ` +
        `page to result ${Date.now() - t0} ms`);
      await assertClean(s);
    });

    test("a BF16 safetensors file opened through the file input gives the CLI's ε to 1e-7", { skip: engine.missing, timeout: 180_000 }, async () => {
      await opened();
      features ??= await s.wasmFeatures();
      const { path, want } = withCli(BF16);
      const t0 = Date.now();
      const r = await s.analyseFile(path);
      assert.equal(r.status, "done", r.text);
      assert.equal(r.report.tensor, "model.embed_tokens.weight");
      assert.equal(r.report.dtype, "BF16");
      assert.equal(r.report.rows, 4096);
      assert.equal(r.report.dim, 384);
      assert.equal(r.report.exact, true);
      assert.equal(r.report.pairs, (4096 * 4095) / 2);
      assert.equal(r.report.kernel, engine.kernel(features));
      for (const k of ["epsilon", "mu", "sigma"]) {
        assert.ok(Math.abs(r.report[k] - want[k]) <= TOLERANCE, `${k}: ${s.engine} ${r.report[k]} CLI ${want[k]}`);
      }
      console.log(`${engine.tag}: BF16 4096×384 ε ${r.report.epsilon} (CLI ${want.epsilon}, Δ ${Math.abs(r.report.epsilon - want.epsilon).toExponential(1)}), ` +
        `kernel ${r.report.kernel}, ${r.report.workers} workers, pass ${Math.round(r.report.timing_ms)} ms, open to result ${Date.now() - t0} ms`);
      await s.screenshot(join(OUT, `engines-${engine.tag}.png`));
      await assertClean(s);
    });

    test("Cancel mid-pass goes to the cancelled state, no result of that run follows, and the next file is exact", { skip: engine.missing, timeout: 180_000 }, async () => {
      await opened();
      const long = fixture(...LONG_FILE);
      const before = (await s.report()).run;
      await s.setFile('[data-testid="file-input"]', long);
      // The exact pass of this file has started: a running ε for its rows is on screen.
      const shown = await s.waitFor((before, rows) => {
        const el = document.querySelector('[data-testid="report"]');
        const progress = document.querySelector('[data-testid="progress"]');
        const text = document.querySelector('[data-testid="running-epsilon"]')?.textContent ?? "";
        const live = el && Number(el.getAttribute("data-run")) > before && el.getAttribute("data-status") === "running" && progress && !progress.hidden;
        return live && text.includes("running ε") && text.includes(`of ${rows} rows`) ? text : false;
      }, [before, LONG.rows.toLocaleString("en-US")], { timeout: 120_000, interval: 50, what: "the running ε of the long file" });
      const run = (await s.report()).run;
      const t0 = Date.now();
      await s.click('[data-testid="cancel"]');
      await s.waitFor((run) => {
        const el = document.querySelector('[data-testid="report"]');
        return el.getAttribute("data-status") === "cancelled" && Number(el.getAttribute("data-run")) === run;
      }, [run], { timeout: 10_000, interval: 20, what: "the cancelled state" });
      const roundTripMs = Date.now() - t0;
      // Mid-pass: the running ε on screen when the page went to "cancelled" was short of all rows.
      const cancelled = (await s.pageLog()).find((e) => e.run === run && e.status === "cancelled");
      const atCancel = (cancelled?.shown ?? shown).match(/after ([\d,]+) of ([\d,]+) rows/);
      assert.ok(atCancel, `a running ε was on screen at the cancel: ${cancelled?.shown ?? shown}`);
      const [seen, total] = atCancel.slice(1).map((x) => Number(x.replaceAll(",", "")));
      assert.equal(total, LONG.rows);
      assert.ok(seen < total, `cancelled mid-pass (${seen} of ${total} rows)`);
      const clickedAt = await s.evaluate(() => window.__enginesCancelAt);
      assert.ok(clickedAt !== undefined && clickedAt <= cancelled.at, "the cancelled state followed the click on Cancel");
      const cancelMs = Math.round(cancelled.at - clickedAt);
      // Wait out the time the whole pass would have taken (from the demo's pass in this engine,
      // scaled by rows²·d), so a run that went on in the background would have posted its result.
      const scale = (LONG.rows ** 2 * LONG.dim) / (16384 ** 2 * 1024);
      const waitMs = Math.min(30_000, Math.max(3_000, 1.25 * scale * (demoMs ?? 10_000)));
      await new Promise((r) => setTimeout(r, waitMs));
      const after = await s.report();
      assert.equal(after.run, run, "no other run started");
      assert.equal(after.status, "cancelled", `still cancelled ${Math.round(waitMs)} ms later`);
      assert.equal(after.report, null, "no Report of the cancelled run");
      const states = (await s.pageLog()).filter((e) => e.run === run).map((e) => e.status);
      assert.deepEqual(states, ["running", "cancelled"], `states of run ${run}`);
      // The page stays usable: the next file gives its exact result.
      const { path: small, want } = withCli(SMALL);
      const r = await s.analyseFile(small, 60_000);
      assert.equal(r.status, "done", r.text);
      assert.equal(r.report.exact, true);
      assert.ok(Math.abs(r.report.epsilon - want.epsilon) <= TOLERANCE, `after the cancel: ε ${r.report.epsilon} vs CLI ${want.epsilon}`);
      console.log(`${engine.tag}: cancelled ${LONG.rows}×${LONG.dim} after ${seen} of ${total} rows, ${cancelMs} ms from the click (${roundTripMs} ms through the driver); ` +
        `still cancelled, no Report, ${Math.round(waitMs)} ms later; next file ε ${r.report.epsilon} over ${r.report.workers} workers (CLI ${want.epsilon} over ${want.workers} threads)`);
      await assertClean(s);
    });
  });
}
