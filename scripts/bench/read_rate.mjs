// How fast the page reads a local file (a benchmark for scripts/bench.sh, not a test): serves DIST
// on 127.0.0.1, opens the page in headless Chromium with ?workers=N, drops FILE (and with --tensor,
// analyses that tensor of it once the first result is in) and times the run from the drop (or the
// click) to its final status, done or error. Prints one JSON line: the tensor's bytes, the seconds,
// the rate in MB/s (10⁶ bytes), and the status. With --limit-s, a run still going then is timed by
// the rows its workers had reported.
//   node scripts/bench/read_rate.mjs DIST FILE [--workers N] [--tensor NAME] [--limit-s S]
import { serve, launch, finalReport, currentRun } from "../../tests/e2e/harness.mjs";

const [dist, file, ...rest] = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = rest.indexOf(name);
  return i >= 0 ? rest[i + 1] : fallback;
};
const workers = opt("--workers", "1");
const tensor = opt("--tensor", null);
const limitS = Number(opt("--limit-s", "3600"));

/** Runs in the page before its scripts: keeps each worker's latest Progress of each run (rows
 *  seen, with the time), and the tensors of the last Opened. */
function watchWorkers() {
  const seen = (window.__readRate = { progress: {}, tensors: [], chosen: null });
  const Native = window.Worker;
  let next = 0;
  window.Worker = class extends Native {
    constructor(...args) {
      super(...args);
      const worker = next++;
      this.addEventListener("message", (e) => {
        const json = typeof e.data === "string" ? e.data : e.data?.json;
        let envelope;
        try { envelope = JSON.parse(json); } catch { return; }
        const { run, response } = envelope;
        if (response?.Opened) {
          seen.tensors = response.Opened.tensors;
          seen.chosen = response.Opened.chosen;
        }
        if (response?.Progress) {
          seen.progress[run] ??= {};
          seen.progress[run][worker] = { rows_seen: response.Progress.rows_seen, t: performance.now() };
        }
      });
    }
  };
}

const BYTES = { F64: 8, F32: 4, F16: 2, BF16: 2, F8_E4M3: 1, F8_E5M2: 1 };
const server = await serve(dist);
const b = await launch(server.url);
try {
  await b.context.addInitScript(watchWorkers);
  await b.page.goto(`${server.url}?workers=${workers}`);
  await finalReport(b.page); // the opening demo
  let before = await currentRun(b.page);
  let t0 = await b.page.evaluate(() => performance.now());
  await b.page.setInputFiles('[data-testid="file-input"]', [file]);
  if (tensor) {
    await finalReport(b.page, 600_000, before);
    before = await currentRun(b.page);
    await b.page.selectOption('[data-testid="tensor-select"]', tensor);
    t0 = await b.page.evaluate(() => performance.now());
    await b.page.click('[data-testid="tensor-run"]');
  }
  let r = null;
  try {
    r = await finalReport(b.page, limitS * 1000, before);
  } catch {
    // Still running at the limit: timed by the rows reported so far.
  }
  const t1 = await b.page.evaluate(() => performance.now());
  const state = await b.page.evaluate(() => window.__readRate);
  const info = state.tensors.find((t) => t.name === state.chosen);
  if (!info) throw new Error(`no Opened message for ${file}`);
  const dtype = typeof info.dtype === "string" ? info.dtype : Object.keys(info.dtype)[0];
  const [rows, dim] = info.shape.map(Number);
  const rowBytes = dim * (BYTES[dtype] ?? NaN);
  const run = Math.max(...Object.keys(state.progress).map(Number));
  const latest = Object.values(state.progress[run] ?? {});
  const rowsSeen = latest.reduce((s, p) => s + p.rows_seen, 0);
  const done = r !== null;
  const seconds = (done ? t1 - t0 : Math.max(...latest.map((p) => p.t), t0 + 1) - t0) / 1000;
  const bytes = done ? rows * rowBytes : rowsSeen * rowBytes;
  console.log(JSON.stringify({
    file, tensor: info.name, dtype, rows, dim, workers,
    status: done ? r.status : "still running", seconds, bytes,
    mb_per_s: bytes / seconds / 1e6,
    epsilon: r?.report?.epsilon ?? null,
    kernel: r?.report?.kernel ?? null,
    gram_gflops: r?.report?.gram_gflops ?? null,
    message: r && r.status === "error" ? r.text.slice(0, 200) : undefined,
  }));
} finally {
  await b.close();
  server.close();
}
