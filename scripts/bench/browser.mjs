// Browser timings for scripts/bench.sh (a benchmark, not a test): serves dist/ on 127.0.0.1, opens
// the page in headless Chromium with ?workers=N for each N given, drops the file and measures the
// time to the first running ε on screen and to the exact result. Prints one JSON line per run; the
// first run also asks a worker of each build for its peak f32x4 rate and its Gram kernel's rate.
// N = "gpu" opens the page with ?gpu=1 in a Chromium allowed WebGPU on the machine's own GPU (no
// software adapter): where it has none, that run prints {"workers": "gpu", "skipped": "no GPU adapter"}.
//   node scripts/bench/browser.mjs DIST FILE N1 [N2 ...]
import { serve, launch, finalReport, currentRun, workerBenchmark } from "../../tests/e2e/harness.mjs";

const [dist, file, ...counts] = process.argv.slice(2);

/** Each worker build's Benchmark answer (the register-only peak loop and the Gram kernels), from a
 *  worker of our own in the page: {plain: {...}, relaxed: {...}}. */
async function benchmark(page) {
  return {
    plain: await workerBenchmark(page, "orthoscope-worker", 200_000_000),
    relaxed: await workerBenchmark(page, "orthoscope-worker-relaxed", 200_000_000),
  };
}
const server = await serve(dist);
try {
  for (const n of counts) {
    const gpu = n === "gpu";
    const b = await launch(server.url, gpu ? ["--enable-unsafe-webgpu", "--enable-features=Vulkan"] : []);
    try {
      await b.page.goto(gpu ? `${server.url}?gpu=1` : `${server.url}?workers=${n}&gpu=0`);
      await finalReport(b.page); // the opening demo
      if (gpu) {
        // Chromium may reach a software adapter (SwiftShader, or lavapipe through Vulkan) that
        // WebGPU does not flag as a fallback: it would take an hour here, so time only real GPUs.
        const adapter = await b.page.evaluate(async () => {
          const a = await navigator.gpu?.requestAdapter();
          if (!a) return { software: true, name: "none" };
          const i = a.info ?? {};
          const name = [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(" ");
          return { software: Boolean(a.isFallbackAdapter || i.isFallbackAdapter) || /swiftshader|llvmpipe|lavapipe|software/i.test(name), name };
        });
        if (adapter.software) {
          console.error(`page with ?gpu=1: no GPU adapter (${adapter.name || "unnamed"})`);
          console.log(JSON.stringify({ workers: n, skipped: "no GPU adapter" }));
          continue;
        }
      }
      const before = await currentRun(b.page);
      // Watch the page itself so the times do not include the test driver's polling.
      await b.page.evaluate(() => {
        window.__bench = { first: null, t0: performance.now() };
        const seen = () => {
          const el = document.querySelector('[data-testid="running-epsilon"]');
          if (window.__bench.first === null && el && /ε/.test(el.textContent || "")) {
            window.__bench.first = performance.now();
          }
        };
        new MutationObserver(seen).observe(document.body, { subtree: true, childList: true, characterData: true });
      });
      await b.page.setInputFiles('[data-testid="file-input"]', [file]);
      const r = await finalReport(b.page, 3_600_000, before);
      const t = await b.page.evaluate(() => ({ ...window.__bench, end: performance.now() }));
      if (r.status !== "done") throw new Error(`workers=${n}: ${r.text}`);
      if (gpu && (!r.report.gpu || r.report.gpu.fallback_adapter)) {
        console.error(`page with ?gpu=1: no GPU adapter (${r.report.gpu?.adapter ?? r.report.gpu_fallback})`);
        console.log(JSON.stringify({ workers: n, skipped: "no GPU adapter" }));
        continue;
      }
      const peak = n === counts[0] ? await benchmark(b.page) : null;
      console.log(JSON.stringify({
        workers: n,
        workers_used: r.report.workers ?? 1,
        seconds: (t.end - t.t0) / 1000,
        first_estimate_s: t.first === null ? null : (t.first - t.t0) / 1000,
        timing_ms: r.report.timing_ms,
        epsilon: r.report.epsilon,
        mu: r.report.mu,
        sigma: r.report.sigma,
        kernel: r.report.kernel,
        gram_gflops: r.report.gram_gflops ?? null,
        gpu: r.report.gpu ?? null,
        peak,
      }));
    } finally {
      await b.close();
    }
  }
} finally {
  server.close();
}
