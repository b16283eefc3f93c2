// End to end: the two worker builds. Chromium validates relaxed SIMD, so the page
// loads the relaxed build by default and the plain simd128 one with ?kernel=simd128; both give the
// CLI's ε within the f32 kernel's tolerance, and each report names the kernel that ran. Also: a
// worker of the bench's own answers a Benchmark request (the way scripts/bench.sh measures
// GFLOP/s), printed, never asserted as a time.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertClean, serve, openApp, analyseFiles, fixture, cliReport, workerBenchmark, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

test("?kernel=simd128 and the default (relaxed SIMD) give the same ε within 1e-7 and say which kernel ran", async () => {
  const path = fixture("kernel-4096x384-bf16.safetensors", "--rows", "4096", "--dim", "384", "--dtype", "BF16", "--seed", "8");
  const want = cliReport(path);
  assert.equal(want.kernel, "portable f32");
  const results = {};
  for (const [query, kernel] of [["", "relaxed-simd f32"], ["?kernel=simd128", "simd128 f32"], ["?kernel=simd128&precision=f64", "simd128 f64"]]) {
    const b = await openApp(server, query);
    try {
      const r = await analyseFiles(b.page, path);
      assert.equal(r.status, "done", r.text);
      assert.equal(r.report.exact, true);
      assert.equal(r.report.kernel, kernel, `${query || "default"}: the kernel that ran`);
      assert.equal(r.report.precision, kernel.split(" ")[1]);
      assert.ok(r.report.gram_gflops > 0, `kernel speed in the report: ${r.report.gram_gflops}`);
      results[query] = r.report;
      console.log(`${query || "default"}: kernel ${r.report.kernel}, ε ${r.report.epsilon}, Gram ${r.report.gram_gflops.toFixed(1)} GFLOP/s, ${Math.round(r.report.timing_ms)} ms`);
      assertClean(b);
    } finally { await b.close(); }
  }
  const relaxed = results[""], plain = results["?kernel=simd128"], f64 = results["?kernel=simd128&precision=f64"];
  assert.ok(Math.abs(relaxed.epsilon - plain.epsilon) <= 1e-7, `relaxed ${relaxed.epsilon} vs plain ${plain.epsilon}`);
  // The plain kernel keeps the portable one's arithmetic order: the CLI's ε to the last bits.
  assert.ok(Math.abs(plain.epsilon - want.epsilon) <= 1e-12, `plain ${plain.epsilon} vs CLI ${want.epsilon}`);
  assert.ok(Math.abs(f64.epsilon - want.epsilon) <= 1e-7, `f64 ${f64.epsilon} vs CLI f32 ${want.epsilon}`);
  assert.equal(relaxed.mu, plain.mu, "μ comes from f64 unit rows in every kernel");
});

test("each worker build answers a Benchmark request (how scripts/bench.sh reads GFLOP/s)", async () => {
  const b = await openApp(server, "?kernel=simd128");
  try {
    for (const meta of ["orthoscope-worker", "orthoscope-worker-relaxed"]) {
      const result = await workerBenchmark(b.page, meta, 100_000_000);
      console.log(`${meta}: ${JSON.stringify(result)}`);
      const relaxed = meta.endsWith("relaxed");
      assert.equal(result.kernel, relaxed ? "relaxed-simd" : "simd128");
      assert.ok(result.peak_gflops > 0 && result.kernel_gflops > 0 && result.kernel_f64_gflops > 0);
      assert.equal(result.peak_relaxed_gflops === null, !relaxed, "the relaxed peak only in the relaxed build");
    }
    assertClean(b);
  } finally { await b.close(); }
});
