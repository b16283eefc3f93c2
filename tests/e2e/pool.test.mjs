// The worker pool : a pass split over workers gives the one-worker ε,
// Cancel stops the pool and the next file works, and a worker that crashes mid-run yields a message
// within 2 s, after which the rebuilt pool analyses the next file correctly.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertClean, serve, finalReport, openApp, analyseFiles, fixture, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

const BIG = () => fixture("trained-32000x2048-bf16.safetensors", "--rows", "32000", "--dim", "2048", "--dtype", "BF16", "--seed", "3");
const SMALL = () => fixture("small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32");

/** Analyses `path` on a page opened with `query`; returns the report and the wall time (ms). */
async function timed(query, path) {
  const b = await openApp(server, query);
  try {
    const t0 = Date.now();
    const r = await analyseFiles(b.page, path);
    const ms = Date.now() - t0;
    assert.equal(r.status, "done", r.text);
    const time = await b.page.textContent('[data-testid="report"]');
    assertClean(b);
    return { report: r.report, ms, time };
  } finally { await b.close(); }
}

test("?workers=1 and ?workers=2 give the same exact ε, and the Report says how many ran", async () => {
  const path = BIG();
  const one = await timed("?workers=1", path);
  const two = await timed("?workers=2", path);
  assert.equal(one.report.workers, 1);
  assert.equal(two.report.workers, 2);
  assert.ok(one.report.exact && two.report.exact);
  assert.equal(two.report.rows_used, one.report.rows_used);
  for (const k of ["epsilon", "mu", "sigma"]) {
    assert.ok(Math.abs(one.report[k] - two.report[k]) < 1e-9, `${k}: 1 worker ${one.report[k]}, 2 workers ${two.report[k]}`);
  }
  assert.deepEqual(two.report.histogram, one.report.histogram, "the histogram is the lead's sample either way");
  assert.match(two.time, /2 workers · SIMD: /);
  assert.match(one.time, /1 worker · SIMD: /);
  console.log(`exact pass 32000×2048 bf16: 1 worker ${one.ms} ms (report ${one.report.timing_ms.toFixed(0)} ms), ` +
    `2 workers ${two.ms} ms (report ${two.report.timing_ms.toFixed(0)} ms), speed-up ${(one.report.timing_ms / two.report.timing_ms).toFixed(2)}×`);
});

test("Cancel stops every worker of the pool and the next file works", async () => {
  const b = await openApp(server, "?workers=2");
  try {
    await b.page.setInputFiles('[data-testid="file-input"]', BIG());
    await b.page.waitForSelector('[data-testid="running-epsilon"]:has-text("running ε")', { timeout: 60_000 });
    const t0 = Date.now();
    await b.page.click('[data-testid="cancel"]');
    await b.page.waitForSelector('[data-testid="report"][data-status="cancelled"]', { timeout: 5_000 });
    assert.ok(Date.now() - t0 < 2000, "cancel took too long");
    const r = await analyseFiles(b.page, SMALL());
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.rows, 2000);
    assert.equal(r.report.workers, 2);
    assert.equal(r.report.exact, true);
    assertClean(b);
  } finally { await b.close(); }
});

/** Runs BIG with a worker failing as `query` asks; the page must show `message` within 2 s of the
 *  worker's console line `started` (logged when the failure begins), and then analyse SMALL exactly
 *  with a rebuilt pool. Only the failure's own errors may reach the console. */
async function recovers(query, started, message, expectedErrors) {
  const b = await openApp(server, query);
  let startedAt = null;
  b.page.on("worker", (w) => w.on("console", (m) => { if (startedAt === null && started.test(m.text())) startedAt = Date.now(); }));
  try {
    await b.page.setInputFiles('[data-testid="file-input"]', BIG());
    await b.page.waitForSelector('[data-testid="report"][data-status="error"]', { timeout: 60_000 });
    const shownAt = Date.now();
    const alert = await b.page.textContent('[role="alert"]');
    assert.match(alert, message, alert);
    assert.ok(startedAt !== null, `the worker logged ${started}`);
    assert.ok(shownAt - startedAt < 2000, `the message came ${shownAt - startedAt} ms after the failure began`);
    console.log(`${query}: message ${shownAt - startedAt} ms after the failure began: ${alert.trim()}`);
    assert.deepEqual(b.errors.filter((e) => !expectedErrors.test(e)), []);
    b.errors.length = 0;
    const r = await analyseFiles(b.page, SMALL());
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.workers, 2);
    assert.equal(r.report.exact, true);
    assertClean(b);
  } finally { await b.close(); }
}

test("a worker that crashes mid-run fails the run with a message within 2 s; the rebuilt pool works", async () => {
  // ?crash_after_rows: a real Rust panic (then a wasm trap) in the last worker of the first file's run.
  await recovers("?workers=2&crash_after_rows=2000", /test crash/, /worker crashed, a bug in Orthoscope; its workers were restarted/, /test crash|panicked|unreachable|RuntimeError|analysis worker/i);
});

test("a worker that runs out of memory mid-run (no panic hook, a bare trap) fails the run with a message within 2 s; the rebuilt pool works", async () => {
  // ?crash=oom: the last worker allocates until its wasm memory cannot grow; Rust's allocation
  // failure aborts with an `unreachable` trap, which only the Worker's error event reports.
  await recovers("?workers=2&crash_after_rows=2000&crash=oom", /test out of memory/, /analysis worker stopped .*out of memory/, /unreachable|RuntimeError|analysis worker|memory/i);
});
