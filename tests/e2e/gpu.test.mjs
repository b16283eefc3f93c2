// The GPU pass in the page: Chromium's WebGPU on SwiftShader (a software, fallback adapter, taken
// only with ?gpu=1) runs the same WGSL Gram kernel as the CLI's `--gpu`; ε equals the CLI's CPU pass
// to 1e-7 on BF16, F16 and F32 files; a GPU device lost mid-pass (a hook of the test build) ends
// with the exact result from the CPU pool and a message; Cancel and Stop here act on a GPU pass
// (their latency from the click is printed); ?gpu=0 and the
// default (which refuses a fallback adapter) leave the pass on the CPU and say why.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  assertClean, serve, currentRun, openApp, openAppWithLog, pageLog, cancelAcknowledged, assertCancelledMidPass,
  analyseFiles, fixture, cliReport, finalReport, WEBGPU_FLAGS, ROOT,
} from "./harness.mjs";

let server;
let hooked;
before(async () => {
  server = await serve(join(ROOT, "dist"));
  // The lost-device hook exists only in the test build (cargo feature `test-hooks`), and only in
  // its plain worker (the relaxed worker's link names its own features): ?kernel=simd128 there.
  hooked = await serve(join(ROOT, "target/e2e-dist"));
});
after(() => { server?.close(); hooked?.close(); });

const FILES = () => [
  fixture("gpu-3001x77-bf16.safetensors", "--rows", "3001", "--dim", "77", "--dtype", "BF16", "--seed", "11"),
  fixture("gpu-2500x130-f16.safetensors", "--rows", "2500", "--dim", "130", "--dtype", "F16", "--seed", "12"),
  fixture("gpu-2000x96-f32.safetensors", "--rows", "2000", "--dim", "96", "--dtype", "F32", "--seed", "13"),
];
// Long enough on SwiftShader to be cancelled and to lose the device mid-pass.
const BIG = () => fixture("gpu-32000x512-bf16.safetensors", "--rows", "32000", "--dim", "512", "--dtype", "BF16", "--seed", "14");

test("?gpu=1 on SwiftShader: the WebGPU pass gives the CLI's ε to 1e-7 on BF16, F16 and F32 files, and says so", async () => {
  const b = await openApp(server, "?gpu=1", WEBGPU_FLAGS);
  try {
    for (const path of FILES()) {
      const want = cliReport(path);
      const r = await analyseFiles(b.page, path);
      assert.equal(r.status, "done", r.text);
      assert.equal(r.report.exact, true);
      assert.ok(r.report.gpu, `${path}: the pass ran on the CPU: ${r.report.gpu_fallback}`);
      assert.equal(r.report.gpu.backend, "webgpu");
      assert.equal(r.report.gpu.fallback_adapter, true, "SwiftShader is a fallback adapter");
      assert.equal(r.report.workers, 1);
      assert.equal(r.report.rows_used, want.rows_used);
      assert.ok(Math.abs(r.report.epsilon - want.epsilon) <= 1e-7, `${path}: ε ${r.report.epsilon} vs CLI ${want.epsilon}`);
      assert.ok(Math.abs(r.report.sigma - want.sigma) <= 1e-6 * want.sigma, `${path}: σ ${r.report.sigma} vs CLI ${want.sigma}`);
      assert.match(await b.page.textContent('[data-testid="gpu"]'), /^GPU: .+ \(webgpu, a software adapter\)$/);
      console.log(`${path}: ε ${r.report.epsilon} (CLI ${want.epsilon}, Δ ${Math.abs(r.report.epsilon - want.epsilon).toExponential(1)}) on ${r.report.gpu.adapter}`);
    }
    assertClean(b);
  } finally { await b.close(); }
});

test("?gpu=0 requests no adapter; the default refuses SwiftShader's fallback adapter; both say so", async () => {
  // Large enough for the default to want a GPU (smaller passes stay on the CPU without a word).
  const path = BIG();
  const want = cliReport(path);
  for (const [query, why] of [["?gpu=0", null], ["", /fallback/]]) {
    const b = await openApp(server, query, WEBGPU_FLAGS);
    try {
      const r = await analyseFiles(b.page, path);
      assert.equal(r.status, "done", r.text);
      assert.equal(r.report.gpu, null, `${query || "default"}: CPU`);
      assert.ok(Math.abs(r.report.epsilon - want.epsilon) <= 1e-7);
      if (why === null) {
        // Had ?gpu=0 asked for an adapter it would have been told SwiftShader's: nothing to report.
        assert.equal(r.report.gpu_fallback ?? null, null, "?gpu=0: no adapter asked for, nothing to explain");
        assert.equal(await b.page.$('[data-testid="gpu"]'), null);
      } else {
        assert.match(r.report.gpu_fallback, why);
        assert.match(await b.page.textContent('[data-testid="gpu"]'), /^CPU: /);
      }
      assertClean(b);
    } finally { await b.close(); }
  }
});

test("a GPU device lost mid-pass: the pass finishes exact on the CPU pool, with a message", async () => {
  const path = BIG();
  const want = cliReport(path);
  const b = await openAppWithLog(hooked, "?gpu=1&workers=2&kernel=simd128&crash_after_rows=3000&crash=gpu-lost", WEBGPU_FLAGS);
  try {
    const r = await analyseFiles(b.page, path);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.exact, true);
    assert.equal(r.report.gpu, null, "the result came from the CPU");
    assert.match(r.report.gpu_fallback, /GPU failed during the pass/);
    assert.ok(Math.abs(r.report.epsilon - want.epsilon) <= 1e-7, `ε ${r.report.epsilon} vs CLI ${want.epsilon}`);
    const log = await pageLog(b.page);
    const lost = log.findIndex((e) => e.kind === "GpuFailed" && e.run === r.run);
    assert.ok(lost >= 0, "the lead said its GPU failed");
    assert.ok(log.slice(0, lost).some((e) => e.kind === "Progress" && e.run === r.run && e.rows_seen >= 3000), "the GPU pass was under way");
    assert.equal(r.report.workers, 2, "the rerun used the CPU pool");
    assert.match(await b.page.textContent('[data-testid="gpu"]'), /^CPU: the GPU failed/);
    console.log(`lost device: ${r.report.gpu_fallback}`);
    // The browser may log the device's loss, which this test caused on purpose; nothing else.
    b.errors.splice(0, b.errors.length, ...b.errors.filter((e) => !/destroy|lost|device/i.test(e)));
    assertClean(b);
  } finally { await b.close(); }
});

test("Cancel stops a GPU pass at once and the page stays usable", async () => {
  const big = BIG();
  const [small] = FILES();
  const b = await openAppWithLog(server, "?gpu=1", WEBGPU_FLAGS);
  try {
    await b.page.setInputFiles('[data-testid="file-input"]', big);
    await b.page.waitForSelector('[data-testid="running-epsilon"]:has-text("running ε")', { timeout: 60_000 });
    const run = await currentRun(b.page);
    await b.page.click('[data-testid="cancel"]');
    await b.page.waitForSelector('[data-testid="report"][data-status="cancelled"]');
    await cancelAcknowledged(b.page, run);
    const r = await analyseFiles(b.page, small);
    assert.equal(r.status, "done", r.text);
    assert.ok(r.report.gpu, "the next file ran on the GPU again");
    const { seen, total, shownMs, ackMs } = assertCancelledMidPass(await pageLog(b.page), run);
    console.log(`GPU pass cancelled after ${seen} of ${total} rows; shown ${shownMs.toFixed(0)} ms and acknowledged ${ackMs.toFixed(0)} ms after the click`);
    assertClean(b);
  } finally { await b.close(); }
});

test("Stop here during a GPU pass keeps the running estimate, with its interval, as the result", async () => {
  const b = await openAppWithLog(server, "?gpu=1", WEBGPU_FLAGS);
  try {
    const before = await currentRun(b.page);
    await b.page.setInputFiles('[data-testid="file-input"]', BIG());
    await b.page.waitForSelector('[data-testid="running-epsilon"]:has-text("running ε")', { timeout: 60_000 });
    await b.page.click('[data-testid="stop-early"]');
    const r = await finalReport(b.page, 60_000, before);
    assert.equal(r.status, "done", r.text);
    assert.ok(r.report.gpu, `the pass ran on the GPU: ${r.report.gpu_fallback}`);
    assert.equal(r.report.exact, false);
    assert.ok(r.report.rows_seen < 32000, `${r.report.rows_seen} rows seen`);
    const [lo, hi] = r.report.epsilon_ci;
    assert.ok(lo < r.report.epsilon && r.report.epsilon < hi, `[${lo}, ${hi}] around ${r.report.epsilon}`);
    const want = cliReport(BIG());
    assert.ok(lo - 0.01 < want.epsilon && want.epsilon < hi + 0.01, `the exact ε ${want.epsilon} near [${lo}, ${hi}]`);
    const log = await pageLog(b.page);
    const click = log.findLast((e) => e.click === "stop-early");
    const done = log.find((e) => e.status === "done" && e.run === r.run);
    assert.ok(click && done && done.t >= click.t, "the result followed the click");
    console.log(`GPU pass stopped after ${r.report.rows_seen} of 32000 rows; the estimate shown ${(done.t - click.t).toFixed(0)} ms after the click`);
    assertClean(b);
  } finally { await b.close(); }
});
