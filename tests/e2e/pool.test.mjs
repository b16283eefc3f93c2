// The worker pool : a pass split over workers gives the one-worker ε,
// Cancel stops the pool and the next file works, and a worker that crashes mid-run fails the run at
// once (in the turn its crash reaches the page), after which the rebuilt pool analyses the next
// file correctly. Each "at once" is an order of events in the page, never a clock.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import {
  assertClean, serve, currentRun, openApp, openAppWithLog, pageLog, progressFrom, cancelAcknowledged, assertCancelledMidPass,
  analyseFiles, finalReport, fixture, cliReport, ROOT, OUT,
} from "./harness.mjs";

let server;
// The crash hooks exist only in the test build (cargo feature `test-hooks`, built by
// scripts/test.sh into target/e2e-dist): the page and the plain worker, hence `kernel=simd128`
// in the crash runs (the relaxed worker's link names its own features).
before(async () => { server = await serve(join(ROOT, "target/e2e-dist")); });
after(() => server?.close());

const BIG = () => fixture("trained-32000x2048-bf16.safetensors", "--rows", "32000", "--dim", "2048", "--dtype", "BF16", "--seed", "3");
const SMALL = () => fixture("small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32");

/** Analyses `path` on a page opened with `query`; returns the report, the wall time (ms) and the
 *  page log of the run (`openAppWithLog`). */
async function timed(query, path) {
  const b = await openAppWithLog(server, query);
  try {
    const t0 = Date.now();
    const r = await analyseFiles(b.page, path);
    const ms = Date.now() - t0;
    assert.equal(r.status, "done", r.text);
    const time = await b.page.textContent('[data-testid="report"]');
    const log = (await pageLog(b.page)).filter((e) => e.run === r.run);
    assertClean(b);
    return { report: r.report, ms, time, log };
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
  assert.deepEqual(two.report.top_pairs, one.report.top_pairs);
  // Split, the helper computed blocks of the sample's pairs and the lead took them in: its verdict
  // says how many of the blocks came from the helper, and the helper's pass began after it.
  const verdict = two.log.find((e) => e.kind === "Verdict" && e.worker === 0);
  const dots = two.log.find((e) => e.kind === "SampleDots" && e.worker === 1);
  assert.ok(verdict && dots, `a Verdict from the lead and SampleDots from the helper: ${JSON.stringify(two.log.map((e) => [e.worker, e.kind]))}`);
  assert.ok(dots.t < verdict.t, "the helper's blocks came before the lead's verdict");
  // (At most all the helper posted: a lead that waited long enough computes the missing blocks itself.)
  assert.ok(verdict.from_helpers > 0 && verdict.from_helpers <= dots.blocks && verdict.from_helpers < verdict.blocks,
    `${verdict.from_helpers} of ${verdict.blocks} blocks from the helper, which posted ${dots.blocks}`);
  const helperPass = two.log.find((e) => e.kind === "Progress" && e.worker === 1);
  assert.ok(helperPass && helperPass.t > verdict.t, "the helper's first progress after the verdict");
  assert.ok(!one.log.some((e) => e.kind === "Verdict" || e.kind === "SampleDots"), "one worker pairs its sample alone");
  assert.match(two.time, /2 workers · SIMD: /);
  assert.match(one.time, /1 worker · SIMD: /);
  console.log(`exact pass 32000×2048 bf16: 1 worker ${one.ms} ms (report ${one.report.timing_ms.toFixed(0)} ms), ` +
    `2 workers ${two.ms} ms (report ${two.report.timing_ms.toFixed(0)} ms), speed-up ${(one.report.timing_ms / two.report.timing_ms).toFixed(2)}×; ` +
    `the helper computed ${verdict.from_helpers} of the sample's ${verdict.blocks} blocks of pairs`);
});

test("Cancel stops every worker of the pool and the next file works", async () => {
  const b = await openAppWithLog(server, "?workers=2");
  try {
    await b.page.setInputFiles('[data-testid="file-input"]', BIG());
    await b.page.waitForSelector('[data-testid="running-epsilon"]:has-text("running ε")', { timeout: 60_000 });
    const run = await currentRun(b.page);
    // Both workers are mid-share before the Cancel, so both must stop.
    await progressFrom(b.page, run, 2);
    await b.page.click('[data-testid="cancel"]');
    await b.page.waitForSelector('[data-testid="report"][data-status="cancelled"]');
    await cancelAcknowledged(b.page, run);
    const r = await analyseFiles(b.page, SMALL());
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.rows, 2000);
    assert.equal(r.report.workers, 2);
    assert.equal(r.report.exact, true);
    const { seen, total, workers } = assertCancelledMidPass(await pageLog(b.page), run);
    assert.equal(workers.length, 2, "both workers of the pool took part, and both acknowledged the Cancel");
    console.log(`pool cancelled after ${seen} of ${total} rows`);
    assertClean(b);
  } finally { await b.close(); }
});

/** Runs BIG with a worker failing as `query` asks (its console line `started` marks the failure);
 *  the page must fail the run with `message` at once, and then analyse SMALL exactly with a rebuilt
 *  pool. Only the failure's own errors may reach the console. "At once" is read from the page log:
 *  the run fails in the turn the crash reaches the page (no worker's progress comes in between),
 *  before it could finish, and the next file's run starts only after the message is shown. */
async function recovers(query, started, message, expectedErrors) {
  const b = await openAppWithLog(server, query);
  let startedSeen = false;
  b.page.on("worker", (w) => w.on("console", (m) => { if (started.test(m.text())) startedSeen = true; }));
  try {
    const run = (await currentRun(b.page)) + 1;
    await b.page.setInputFiles('[data-testid="file-input"]', BIG());
    await b.page.waitForSelector('[data-testid="report"][data-status="error"]', { timeout: 60_000 });
    assert.equal(await currentRun(b.page), run, "the file's own run failed");
    const alert = await b.page.textContent('[role="alert"]');
    assert.match(alert, message, alert);
    assert.ok(startedSeen, `the worker logged ${started}`);
    assert.deepEqual(b.errors.filter((e) => !expectedErrors.test(e)), []);
    b.errors.length = 0;
    const r = await analyseFiles(b.page, SMALL());
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.workers, 2);
    assert.equal(r.report.exact, true);
    const log = await pageLog(b.page);
    const failedAt = log.findIndex((e) => e.status === "error" && e.run === run);
    // The crash reaches the page as the worker's own Crashed message (a panic) or as the Worker's
    // error event (a bare trap).
    const crashAt = log.findIndex((e) => e.kind === "Crashed" || e.kind === "error");
    assert.ok(crashAt >= 0 && crashAt < failedAt, `the crash (log entry ${crashAt}) reached the page before the run failed (entry ${failedAt})`);
    const between = log.slice(crashAt + 1, failedAt).filter((e) => e.kind === "Progress");
    assert.deepEqual(between, [], "no worker went on with the run between the crash and the message");
    assert.ok(log.slice(0, failedAt).some((e) => e.run === run && e.kind === "Progress"), "the run was under way when it failed");
    assert.ok(!log.some((e) => e.run === run && e.kind === "Done"), "no worker finished the failed run");
    const statuses = log.filter((e) => "status" in e);
    assert.deepEqual(statuses.filter((e) => e.run === run).map((e) => e.status), ["running", "error"], `states of run ${run}`);
    const next = log.findIndex((e) => "status" in e && e.run > run);
    assert.ok(next > failedAt, "the next file's run started after the message was shown");
    console.log(`${query}: the run failed ${failedAt - crashAt} log entries after the crash reached the page: ${alert.trim()}`);
    assertClean(b);
  } finally { await b.close(); }
}

test("a worker that crashes mid-run fails the run with a message at once; the rebuilt pool works", async () => {
  // ?crash_after_rows: a real Rust panic (then a wasm trap) in the last worker of the first file's run.
  await recovers("?workers=2&kernel=simd128&crash_after_rows=2000", /test crash/, /worker crashed, a bug in Orthoscope; its workers were restarted/, /test crash|panicked|unreachable|RuntimeError|analysis worker/i);
});

test("a worker that runs out of memory mid-run (no panic hook, a bare trap) fails the run with a message at once; the rebuilt pool works", async () => {
  // ?crash=oom: the last worker allocates until its wasm memory cannot grow; Rust's allocation
  // failure aborts with an `unreachable` trap, which only the Worker's error event reports.
  await recovers("?workers=2&kernel=simd128&crash_after_rows=2000&crash=oom", /test out of memory/, /analysis worker stopped .*out of memory/, /unreachable|RuntimeError|analysis worker|memory/i);
});

/** Analyses `path` on the open page and checks the result is exact, from both workers, with the
 *  CLI's ε (`want`); returns it. */
async function exactOnBoth(b, path, want) {
  const r = await analyseFiles(b.page, path);
  assert.equal(r.status, "done", r.text);
  assert.equal(r.report.workers, 2, "both workers ran the pass");
  assert.equal(r.report.exact, true);
  assert.ok(Math.abs(r.report.epsilon - want.epsilon) <= 1e-9, `ε: page ${r.report.epsilon}, CLI ${want.epsilon}`);
  return r;
}

/**
 * Drops `path` again on the open page, clicks Stop here once the running ε covers `minRows` rows,
 * and checks the result is that estimate of 2 bands (not exact, with an interval near the CLI's
 * exact ε `exact`), then that the pool still analyses the next file exactly.
 */
async function stopSplitAt(b, path, minRows, exact) {
  const before = await currentRun(b.page);
  await b.page.setInputFiles('[data-testid="file-input"]', path);
  await b.page.waitForFunction((min) => {
    const m = document.querySelector('[data-testid="running-epsilon"]')?.textContent.match(/after ([\d,]+) of/);
    return m && Number(m[1].replace(/,/g, "")) >= min;
  }, minRows, { timeout: 120_000, polling: 50 });
  await b.page.click('[data-testid="stop-early"]');
  const s = await finalReport(b.page, 60_000, before);
  assert.equal(s.status, "done", s.text);
  assert.equal(s.report.exact, false);
  assert.equal(s.report.workers, 2);
  assert.ok(s.report.rows_seen >= minRows && s.report.rows_seen < 32000, `${s.report.rows_seen} rows seen`);
  const [lo, hi] = s.report.epsilon_ci;
  assert.ok(lo < s.report.epsilon && s.report.epsilon < hi);
  assert.ok(lo - 0.01 < exact && exact < hi + 0.01, `[${lo}, ${hi}] against the exact ${exact}`);
  const small = await analyseFiles(b.page, SMALL());
  assert.equal(small.status, "done", small.text);
  assert.equal(small.report.exact, true);
  assertClean(b);
}

test("?split=columns: every worker reads every row and sums a band of G; the ε is the CLI's, Stop here keeps the bands' last common estimate, and the next file works", async () => {
  const path = BIG();
  const want = cliReport(path, "--threads", "2", "--split", "columns");
  const b = await openApp(server, "?workers=2&split=columns&kernel=simd128");
  try {
    await exactOnBoth(b, path, want);
    // Again, stopped: the running ε on screen comes from every band's checkpoint; it becomes the
    // result, with its interval, and the bands are cancelled. Past the first few hundred rows,
    // where the estimate of this clustered matrix has settled (at 64 rows it is 0.14, against
    // 0.052 exact, in one worker as in two).
    await stopSplitAt(b, path, 1024, want.epsilon);
  } finally { await b.close(); }
});

test("?split=columns with a lagging band: the lead, its own band done, follows the slower band's checkpoints, and Stop here then gives their last common estimate without waiting for the band", async () => {
  const path = BIG();
  const want = cliReport(path, "--threads", "2", "--split", "columns");
  // `crash=slow-band` (test build only): the helper pauses 40 ms after each of its ~500 steps, so
  // it needs 20 s or more, while the lead's own band takes a few seconds.
  const b = await openApp(server, "?workers=2&split=columns&kernel=simd128&crash_after_rows=0&crash=slow-band");
  try {
    // Past 20,000 rows of the common checkpoints the helper has paused ≥ 12 s: the lead is done
    // and waiting, only the helper's checkpoints move the ε on screen, and the result must not be
    // the exact one the lead would otherwise have waited for.
    await stopSplitAt(b, path, 20000, want.epsilon);
  } finally { await b.close(); }
});

test("a narrow matrix sweeps its tail in file order: two workers give the CLI's exact ε, and Stop here in the sweep gives the random phase's estimate, the CLI's after its first 65,536 rows", async () => {
  // 9375 blocks of 64 rows of 512 bytes: the first 1024 positions of the shuffled order are the
  // random phase, the rest is read in file order (src/pass/plan.rs).
  const path = fixture("narrow-600000x256-bf16.safetensors", "--rows", "600000", "--dim", "256", "--dtype", "BF16", "--seed", "4");
  const want = cliReport(path, "--threads", "2");
  const randomPhase = cliReport(path, "--threads", "2", "--rows", "65536");
  assert.equal(randomPhase.rows_seen, 65536);
  const b = await openApp(server, "?workers=2&kernel=simd128");
  try {
    const r = await exactOnBoth(b, path, want);
    console.log(`exact pass 600000×256 bf16 (153.6 MB), 2 workers: ${r.report.timing_ms.toFixed(0)} ms`);

    // Again, stopped half-way: well into the sweep (the random phase is 11 % of the rows).
    const before = await currentRun(b.page);
    await b.page.setInputFiles('[data-testid="file-input"]', path);
    await b.page.waitForFunction(() => {
      const bar = document.querySelector('[data-testid="progress"] progress');
      return bar && Number(bar.value) >= 0.5;
    }, null, { timeout: 120_000, polling: 20 });
    await b.page.click('[data-testid="stop-early"]');
    const s = await finalReport(b.page, 60_000, before);
    assert.equal(s.status, "done", s.text);
    assert.equal(s.report.exact, false, "stopped before the end");
    // Both workers' random phases and nothing of their sweeps: the CLI's first 65,536 rows.
    assert.equal(s.report.rows_seen, 65536);
    for (const k of ["epsilon", "mu", "sigma"]) {
      assert.ok(Math.abs(s.report[k] - randomPhase[k]) <= 1e-9, `${k}: page ${s.report[k]}, CLI ${randomPhase[k]}`);
    }
    const [lo, hi] = s.report.epsilon_ci;
    assert.ok(lo < want.epsilon && want.epsilon < hi, `[${lo}, ${hi}] holds the exact ${want.epsilon}`);
    assertClean(b);
  } finally { await b.close(); }
});

/** A BF16 safetensors file of one `rows`×`dim` embedding whose first `real` rows are seeded values
 *  with a common direction and the rest zero, like a vocabulary padded with unused rows; written
 *  once, into the fixtures' folder. */
function paddedVocabulary(rows, dim, real) {
  const path = join(OUT, `padded-${rows}x${dim}-${real}-real-bf16.safetensors`);
  if (existsSync(path)) return path;
  mkdirSync(OUT, { recursive: true });
  const bytes = rows * dim * 2;
  const header = { "model.embed_tokens.weight": { dtype: "BF16", shape: [rows, dim], data_offsets: [0, bytes] } };
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const data = Buffer.alloc(bytes);
  const f = new Float32Array(1), u = new Uint32Array(f.buffer);
  let s = 12345;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32 - 0.5; };
  for (let r = 0; r < real; r++) {
    for (let c = 0; c < dim; c++) {
      f[0] = next() + (c < 4 ? 0.3 : 0);
      data.writeUInt16LE(u[0] >>> 16, (r * dim + c) * 2);
    }
  }
  writeFileSync(path, Buffer.concat([len, json, data]));
  return path;
}

test("a wide matrix of mostly zero rows is read by one worker in file order though two are there, and gives the CLI's exact ε", async () => {
  // 1250 blocks of 64 rows of d = 1280, all but the first 16 zero: the sample shows a pass bound
  // by its reads (src/pass/analysis/, read_bound), too wide for two shares to sweep, so the lead
  // reads it alone, its tail in file order, rather than split it by rows.
  const path = paddedVocabulary(80000, 1280, 1000);
  const want = cliReport(path, "--threads", "2");
  assert.equal(want.rows_used, 1000);
  const b = await openApp(server, "?workers=2&kernel=simd128");
  try {
    const r = await analyseFiles(b.page, path);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.workers, 1, "one worker read it");
    assert.equal(r.report.exact, true);
    assert.equal(r.report.rows_used, 1000);
    for (const k of ["epsilon", "mu", "sigma"]) {
      assert.ok(Math.abs(r.report[k] - want[k]) <= 1e-9, `${k}: page ${r.report[k]}, CLI ${want[k]}`);
    }
    console.log(`exact pass 80000×1280 bf16 (204.8 MB, 1000 rows non-zero), 1 of 2 workers: ${r.report.timing_ms.toFixed(0)} ms`);
    // A wide matrix of real rows is still split: both workers (the pool is not stuck at one).
    const big = await analyseFiles(b.page, BIG());
    assert.equal(big.status, "done", big.text);
    assert.equal(big.report.workers, 2);
    assertClean(b);
  } finally { await b.close(); }
});

/** A wide matrix analysed with both workers splitting it by columns, then its geometry, equal to
 *  the CLI's; the lead's wasm memory stays under `maxWasm` bytes (it holds G once: the helper's
 *  band arrives apart from its partial and is copied straight into G). */
async function wideSplit(path, maxWasm) {
  const want = cliReport(path, "--threads", "2");
  // The plain simd128 build: its kernels are the CLI's portable ones bit for bit.
  const b = await openApp(server, "?workers=2&kernel=simd128");
  try {
    const r = await exactOnBoth(b, path, want);
    assert.equal(r.report.rows_used, want.rows_used);
    const wasm = r.report.peak_wasm_bytes;
    assert.ok(wasm > 0 && wasm < maxWasm, `the lead's wasm memory: ${wasm} bytes, over ${maxWasm}`);
    // The eigen step runs after the result is shown; wait for its Report.
    const t0 = Date.now();
    await b.page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="report"]');
      const rep = el?.getAttribute("data-report");
      return rep && JSON.parse(rep).geometry;
    }, null, { timeout: 300_000, polling: 200 });
    const waited = Date.now() - t0;
    const g = JSON.parse(await b.page.getAttribute('[data-testid="report"]', "data-report")).geometry;
    const w = want.geometry;
    assert.equal(g.method, "lanczos");
    assert.equal(g.method, w.method);
    assert.ok(g.eigenvalues.length >= 64, `${g.eigenvalues.length} leading eigenvalues`);
    for (let i = 1; i < g.eigenvalues.length; i++) assert.ok(g.eigenvalues[i] <= g.eigenvalues[i - 1], `descending at ${i}`);
    for (let i = 0; i < 16; i++) {
      assert.ok(Math.abs(g.eigenvalues[i] - w.eigenvalues[i]) <= 1e-6 * w.eigenvalues[0], `λ${i}: page ${g.eigenvalues[i]}, CLI ${w.eigenvalues[i]}`);
    }
    assert.ok(Math.abs(g.participation_ratio - w.participation_ratio) <= 1e-9 * w.participation_ratio,
      `participation ratio: page ${g.participation_ratio}, CLI ${w.participation_ratio}`);
    assert.match(await b.page.textContent('[data-testid="report"]'), /participation ratio/);
    console.log(`${want.rows}×${want.dim} bf16, 2 workers: pass ${r.report.timing_ms.toFixed(0)} ms (Gram ${r.report.gram_gflops?.toFixed(1)} GFLOP/s per worker, lead wasm ${(wasm / 1e6).toFixed(0)} MB); ` +
      `eigen step ${g.eigen_ms?.toFixed(0)} ms in the tab (shown ${waited} ms after the result), CLI ${w.eigen_ms?.toFixed(0)} ms`);
    assertClean(b);
  } finally { await b.close(); }
}

test("d = 8192 (a 70B model's width): both workers share the pass and the geometry comes after, equal to the CLI's", async () => {
  // 9000×8192 bf16 (147 MB): from d = 8192 the pool splits by columns (a band of the 268 MB
  // f64 Gram triangle per worker, placed into one G by the lead). The lead holds G, the
  // histogram's sample and its pairs: under 600 MB (942 MB when it also held the band twice).
  const path = fixture("wide-9000x8192-bf16.safetensors", "--rows", "9000", "--dim", "8192", "--dtype", "BF16", "--seed", "21");
  await wideSplit(path, 600e6);
});

test("d = 16384, the widest: two workers share the pass within 1.5 GB of wasm memory each, and the geometry equals the CLI's", async () => {
  // 8400×16384 bf16 (275 MB; the Gram route from V ≥ d/2): G is 1.07 GB, which the lead holds
  // once, its own band grown in place and the helper's copied in from its message.
  const path = fixture("wide-8400x16384-bf16.safetensors", "--rows", "8400", "--dim", "16384", "--dtype", "BF16", "--seed", "22");
  await wideSplit(path, 1.5e9);
});
