// End to end: the built dist/ served on 127.0.0.1 and driven in headless Chromium like a user.
// Every test fails on any console error, page error, worker error or request leaving the origin.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  assertClean, serve, launch, finalReport, currentRun, openApp, openAppWithLog, pageLog, cancelAcknowledged, assertCancelledMidPass,
  analyseFiles, fixture, cliReport, cli, writeSafetensors, OUT, ROOT,
} from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

const CONTRACT_FIELDS = [
  "tensor", "dtype", "rows", "dim", "rows_dropped", "pairs", "exact", "mu", "sigma", "epsilon",
  "epsilon_3sigma", "seed", "log10_capacity", "class", "histogram", "timing_ms",
];

test("the page opens on the built-in demo and shows its exact result", async () => {
  const b = await launch(server.url);
  try {
    await b.page.goto(server.url);
    const r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    for (const f of CONTRACT_FIELDS) assert.ok(f in r.report, `Report lacks ${f}`);
    for (const f of ["jl_c8", "jl_c3029", "adjusted_simple", "adjusted_full"]) assert.equal(typeof r.report.log10_capacity[f], "number");
    assert.equal(r.report.exact, true);
    // Chromium validates relaxed SIMD, so the page loads that worker build (tests/e2e/kernel.test.mjs).
    assert.equal(r.report.kernel, "relaxed-simd f32");
    assert.equal(r.report.histogram.counts.length, 300);
    assert.equal(r.report.histogram.edges.length, 301);
    assert.ok(r.report.histogram.rows_in_histogram >= 2048);
    assert.equal(r.report.class, "2");
    // The demo is the same generated matrix the CLI writes: same ε.
    const path = fixture("demo-trained-like.safetensors", "--kind", "trained-like", "--rows", "16384", "--dim", "1024", "--seed", "1");
    assert.ok(Math.abs(cliReport(path).epsilon - r.report.epsilon) < 1e-6);
    await b.page.screenshot({ path: join(OUT, "demo.png"), fullPage: true });
    assertClean(b);
  } finally { await b.close(); }
});

test("a dropped 8192×1024 bf16 safetensors file gives the CLI's ε to 1e-6", async () => {
  const path = fixture("trained-8192x1024-bf16.safetensors", "--rows", "8192", "--dim", "1024", "--dtype", "BF16", "--seed", "5");
  const want = cliReport(path);
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, path);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.tensor, "model.embed_tokens.weight");
    assert.equal(r.report.dtype, "BF16");
    assert.equal(r.report.rows, 8192);
    assert.equal(r.report.dim, 1024);
    assert.equal(r.report.exact, true);
    assert.equal(r.report.pairs, 8192 * 8191 / 2);
    for (const k of ["epsilon", "mu", "sigma", "epsilon_3sigma"]) {
      assert.ok(Math.abs(r.report[k] - want[k]) < 1e-6, `${k}: browser ${r.report[k]} CLI ${want[k]}`);
    }
    assert.ok(r.report.peak_wasm_bytes > 0);
    const shown = await b.page.textContent('[data-testid="epsilon"]');
    assert.equal(Number(shown), Number(want.epsilon.toPrecision(4)), "the card shows ε to 4 digits");
    await b.page.screenshot({ path: join(OUT, "bf16-8192x1024.png"), fullPage: true });
    assertClean(b);
  } finally { await b.close(); }
});

test("a broken file gets its specific message and the next file still works", async () => {
  cli("hostile", join(OUT, "hostile"));
  const b = await openApp(server);
  try {
    const cases = {
      "header-past-eof": /header claims 5000 bytes/,
      "invalid-json": /not valid JSON/,
      "offsets-past-eof": /model\.embed_tokens\.weight' ends at byte \d+, past the end/,
      "not-2d": /shape \[2, 4, 4\].*must be 2-D/,
      "all-rows-zero": /only 0 usable row\(s\) of 16 \(16 all-zero/,
      "unknown-dtype": /dtype Q7 cannot be analysed/,
      // Other kinds of file under a model's name: named by their first bytes.
      "not-safetensors": /is a zip archive: extract it/,
      "foreign-pytorch-zip": /is a PyTorch checkpoint \(zip archive with data\.pkl\).*save_file/,
      "foreign-git-lfs-pointer": /is a Git LFS pointer, not the weights.*git lfs pull/,
      "foreign-html": /is an HTML page/,
      "foreign-onnx": /is probably an ONNX model/,
      "foreign-empty": /is empty \(0 bytes\)/,
      "offsets-overlap": /'model\.embed_tokens\.weight' \(data_offsets \[0, 128\]\) and 'lm_head\.weight' \(data_offsets \[64, 192\]\) overlap/,
      "offsets-gap": /bytes \[128, 160\) of the data section belong to no tensor/,
    };
    for (const [name, pattern] of Object.entries(cases)) {
      const r = await analyseFiles(b.page, join(OUT, "hostile", `${name}.safetensors`));
      assert.equal(r.status, "error", `${name}: ${r.text}`);
      assert.match(r.text, pattern, name);
    }
    const good = fixture("small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32");
    const r = await analyseFiles(b.page, good);
    assert.equal(r.status, "done", r.text);
    assert.ok(Math.abs(r.report.epsilon - cliReport(good).epsilon) < 1e-6);
    await b.page.screenshot({ path: join(OUT, "after-errors.png"), fullPage: true });
    assertClean(b);
  } finally { await b.close(); }
});

test("?exact=1&seed=7 runs the exact pass with that seed and offers no early stop", async () => {
  const b = await launch(server.url);
  try {
    await b.page.goto(server.url + "?exact=1&seed=7&demo=random-init");
    await b.page.waitForSelector('[data-testid="progress"]');
    assert.equal(await b.page.$('[data-testid="stop-early"]'), null);
    const r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.seed, 7);
    assert.equal(r.report.exact, true);
    assert.equal(r.report.file, "demo-random-init.safetensors");
    // N(0,1) in d = 1024: cosines ~ N(0, 1/d), so ε ≈ 2/√1024 = 0.0625 (paper §5 reference).
    assert.ok(Math.abs(r.report.epsilon - 0.0625) < 0.002, `ε = ${r.report.epsilon}`);
    assertClean(b);
  } finally { await b.close(); }
});

test("?rows=N stops early with an estimate, its interval and its seed", async () => {
  const b = await launch(server.url);
  try {
    await b.page.goto(server.url + "?rows=3000&seed=3");
    const r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.exact, false);
    // Whole blocks of 64 adjacent rows are read: at least 3000 rows, less than a block more.
    assert.ok(r.report.rows_seen >= 3000 && r.report.rows_seen < 3064, `rows seen ${r.report.rows_seen}`);
    assert.equal(r.report.seed, 3);
    const [lo, hi] = r.report.epsilon_ci;
    assert.ok(lo < r.report.epsilon && r.report.epsilon < hi);
    assertClean(b);
  } finally { await b.close(); }
});

test("?embed=1 renders the compact card with the same report element", async () => {
  const b = await launch(server.url);
  try {
    await b.page.goto(server.url + "?embed=1&demo=class1-like");
    const r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.class, "1");
    assert.equal(r.report.capacity_determinate, false);
    assert.equal(await b.page.$('[data-testid="file-input"]'), null, "no drop zone in the embed card");
    assert.match(await b.page.textContent('[data-testid="report"]'), /indeterminate/);
    await b.page.screenshot({ path: join(OUT, "embed.png"), fullPage: true });
    assertClean(b);
  } finally { await b.close(); }
});

test("Cancel stops a long run at once and the page stays usable", async () => {
  const big = fixture("random-32000x2048-bf16.safetensors", "--kind", "random-init", "--rows", "32000", "--dim", "2048");
  const b = await openAppWithLog(server);
  try {
    await b.page.setInputFiles('[data-testid="file-input"]', big);
    await b.page.waitForSelector('[data-testid="running-epsilon"]:has-text("running ε")', { timeout: 60_000 });
    const run = await currentRun(b.page);
    await b.page.click('[data-testid="cancel"]');
    await b.page.waitForSelector('[data-testid="report"][data-status="cancelled"]');
    // "At once" without a clock: the page shows the cancel mid-pass, and each worker of the run
    // answers the Cancel and then posts nothing more about it (rather than finishing the pass).
    await cancelAcknowledged(b.page, run);
    const small = fixture("small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32");
    const r = await analyseFiles(b.page, small);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.rows, 2000);
    const { seen, total, shownMs, ackMs } = assertCancelledMidPass(await pageLog(b.page), run);
    console.log(`cancelled after ${seen} of ${total} rows; shown ${shownMs.toFixed(0)} ms and acknowledged by every worker ${ackMs.toFixed(0)} ms after the click`);
    assertClean(b);
  } finally { await b.close(); }
});

test("Cancel in every phase (before the first estimate, during the exact pass) and a new file during the eigen step after the result: the next file is exact each time", async () => {
  const big = fixture("random-32000x2048-bf16.safetensors", "--kind", "random-init", "--rows", "32000", "--dim", "2048");
  const wide = fixture("random-3000x4096-bf16.safetensors", "--kind", "random-init", "--rows", "3000", "--dim", "4096");
  const small = fixture("small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32");
  const want = cliReport(small);
  const b = await openApp(server);
  const nextIsExact = async (what) => {
    const r = await analyseFiles(b.page, small, 60_000);
    assert.equal(r.status, "done", `${what}: ${r.text}`);
    assert.equal(r.report.exact, true, what);
    assert.ok(Math.abs(r.report.epsilon - want.epsilon) < 1e-6, `${what}: ε ${r.report.epsilon} vs CLI ${want.epsilon}`);
  };
  try {
    // Before the first estimate (the header, the histogram's sample and its pairs), then during
    // the exact pass (a running ε on screen).
    for (const [phase, shown] of [["before the first estimate", "reading the sample for the histogram"], ["during the exact pass", "running ε"]]) {
      await b.page.setInputFiles('[data-testid="file-input"]', big);
      await b.page.waitForSelector(`[data-testid="progress"]:visible [data-testid="running-epsilon"]:has-text("${shown}")`, { timeout: 60_000 });
      await b.page.click('[data-testid="cancel"]');
      await b.page.waitForSelector('[data-testid="report"][data-status="cancelled"]', { timeout: 5_000 });
      await nextIsExact(`after a cancel ${phase}`);
    }
    // d = 4096: the result shows first, then the eigen step runs (one long wasm call that cannot
    // hear a Cancel). A new file then replaces the busy worker and is analysed at once.
    const r = await analyseFiles(b.page, wide);
    assert.equal(r.status, "done", r.text);
    await b.page.waitForSelector('[data-testid="geometry-pending"]', { timeout: 5_000 });
    const t0 = Date.now();
    await nextIsExact("a new file during the eigen step");
    console.log(`a new file during the eigen step at d = 4096: its exact result in ${Date.now() - t0} ms`);
    assert.equal(await b.page.locator('[data-testid="geometry-pending"]').count(), 0, "the old eigen step no longer shows as pending");
    assertClean(b);
  } finally { await b.close(); }
});

test("the first running ε is shown as soon as the pass has one: after its first block of 64 rows", async () => {
  // Not a timing: which estimate comes first. The worker posts it when the first block of the pass
  // is in, instead of waiting for its next progress tick (which showed several blocks later).
  const big = fixture("random-32000x2048-bf16.safetensors", "--kind", "random-init", "--rows", "32000", "--dim", "2048");
  const b = await openApp(server, "?workers=1");
  try {
    await b.page.evaluate(() => {
      window.__firstEstimate = null;
      const el = document.querySelector('[data-testid="running-epsilon"]');
      new MutationObserver(() => {
        if (window.__firstEstimate === null && /running ε/.test(el.textContent)) window.__firstEstimate = el.textContent;
      }).observe(el, { childList: true, subtree: true, characterData: true });
    });
    await b.page.setInputFiles('[data-testid="file-input"]', big);
    await b.page.waitForFunction(() => window.__firstEstimate !== null, null, { timeout: 60_000 });
    const first = await b.page.evaluate(() => window.__firstEstimate);
    assert.match(first, /after 64 of 32,000 rows/, first);
    await b.page.click('[data-testid="cancel"]');
    await b.page.waitForSelector('[data-testid="report"][data-status="cancelled"]', { timeout: 5_000 });
    assertClean(b);
  } finally { await b.close(); }
});

test("Stop here keeps the running estimate, with its interval, as the result", async () => {
  const big = fixture("random-32000x2048-bf16.safetensors", "--kind", "random-init", "--rows", "32000", "--dim", "2048");
  const b = await openApp(server);
  try {
    const before = await currentRun(b.page);
    await b.page.setInputFiles('[data-testid="file-input"]', big);
    await b.page.waitForSelector('[data-testid="running-epsilon"]:has-text("running ε")', { timeout: 60_000 });
    await b.page.click('[data-testid="stop-early"]');
    const r = await finalReport(b.page, 30_000, before);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.exact, false);
    assert.ok(r.report.rows_seen < 32000);
    const [lo, hi] = r.report.epsilon_ci;
    assert.ok(lo < r.report.epsilon && r.report.epsilon < hi);
    // N(0,1) rows in d = 2048: ε ≈ 2/√2048 ≈ 0.0442.
    assert.ok(lo - 0.002 < 0.0442 && 0.0442 < hi + 0.002, `[${lo}, ${hi}]`);
    assert.match(await b.page.textContent('[data-testid="report"]'), /Estimate from [\d,]+ of 32,000 rows/);
    assertClean(b);
  } finally { await b.close(); }
});

test("the tensor picker lists 2-D tensors, preselects the embedding, and re-runs on another choice", async () => {
  const path = writeSafetensors(join(OUT, "three-tensors.safetensors"), [
    { name: "h.0.mlp.weight", rows: 300, dim: 64 },
    { name: "transformer.wte.weight", rows: 3000, dim: 96 },
    { name: "lm_head.weight", rows: 3000, dim: 96, shift: 0.2 },
  ]);
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, path);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.tensor, "transformer.wte.weight");
    assert.equal(r.report.tensor_reason, "known embedding name");
    const select = '[data-testid="tensor-select"]';
    assert.equal(await b.page.$eval(select, (s) => s.value), "transformer.wte.weight");
    const options = await b.page.$$eval(`${select} option`, (os) => os.map((o) => o.value));
    assert.deepEqual(options.sort(), ["h.0.mlp.weight", "lm_head.weight", "transformer.wte.weight"]);
    const before = await currentRun(b.page);
    // Choosing in the list starts nothing; the button does.
    await b.page.selectOption(select, "lm_head.weight");
    assert.equal(await currentRun(b.page), before);
    await b.page.click('[data-testid="tensor-run"]');
    const again = await finalReport(b.page, 60_000, before);
    assert.equal(again.status, "done", again.text);
    assert.equal(again.report.tensor, "lm_head.weight");
    assert.equal(again.report.tensor_reason, "chosen by you");
    const want = cliReport(path, "--tensor", "lm_head.weight");
    assert.ok(Math.abs(again.report.epsilon - want.epsilon) < 1e-6);
    assert.ok(again.report.mu > 0.1, "the shifted tensor has μ far from 0");
    assertClean(b);
  } finally { await b.close(); }
});
