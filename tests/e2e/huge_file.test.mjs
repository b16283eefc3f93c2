// Huge files: a 10 GiB safetensors shard with the embedding stored past the 4 GiB mark
// works in the browser and the CLI, and the page's memory is bounded by the work, not by the file
// (report.peak_wasm_bytes < 300 MB). The file is sparse (`orthoscope generate-sparse`): only its
// header and the 16384×1024 bf16 embedding at its end are written, so it costs ~32 MB of disk; it is
// deleted at the end. playwright-core hands a local Chromium the file's path (DOM.setFileInputFiles),
// so the file is never copied or read whole by the test. Prints wall times and memory; asserts no time.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync, statfsSync } from "node:fs";
import { join } from "node:path";
import { serve, openApp, analyseFiles, cli, cliReport, OUT, ROOT } from "./harness.mjs";

const GIB = 2 ** 30;
const ROWS = 16384;
const DIM = 1024;
const PATH = join(OUT, "huge-10gib-sparse.safetensors");

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => { server?.close(); rmSync(PATH, { force: true }); });

const freeBytes = () => { const s = statfsSync(OUT); return s.bavail * s.bsize; };

/** The CLI's Report and its peak RSS in bytes (from /usr/bin/time -v when present, else null). */
function cliMeasured(path) {
  if (!existsSync("/usr/bin/time")) return { report: cliReport(path), rss: null };
  const bin = join(ROOT, "target/release/orthoscope");
  const r = spawnSync("/usr/bin/time", ["-v", bin, "analyze", path, "--json"], { encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const kb = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr);
  return { report: JSON.parse(r.stdout), rss: kb ? Number(kb[1]) * 1024 : null };
}

test("10 GiB sparse shard, embedding past 4 GiB: browser ε equals the CLI's, wasm memory < 300 MB", async () => {
  mkdirSync(OUT, { recursive: true });
  rmSync(PATH, { force: true });
  const freeBefore = freeBytes();
  let t = Date.now();
  const said = cli("generate-sparse", PATH, "--size-gib", "10", "--rows", String(ROWS), "--dim", String(DIM), "--dtype", "BF16", "--seed", "11");
  const generateMs = Date.now() - t;
  try {
    const st = statSync(PATH);
    assert.equal(st.size, 10 * GIB);
    const onDisk = st.blocks * 512;
    const used = freeBefore - freeBytes();
    console.log(`${said.trim()}; generated in ${generateMs} ms; ${onDisk} B on disk (free space fell by ${used} B)`);
    if (onDisk > 1e9) {
      console.log(`SKIPPED: ${OUT} does not keep holes (${onDisk} B on disk)`);
      return;
    }
    assert.ok(used < 1e9, `the sparse file must not fill the disk: free space fell by ${used} B`);

    t = Date.now();
    const { report: want, rss } = cliMeasured(PATH);
    const cliMs = Date.now() - t;
    assert.equal(want.rows, ROWS);
    assert.equal(want.exact, true);

    const b = await openApp(server);
    try {
      t = Date.now();
      const r = await analyseFiles(b.page, PATH, 1_800_000);
      const browserMs = Date.now() - t;
      assert.equal(r.status, "done", r.text);
      assert.equal(r.report.tensor, "model.embed_tokens.weight");
      assert.equal(r.report.exact, true);
      assert.equal(r.report.rows, ROWS);
      assert.equal(r.report.dim, DIM);
      assert.equal(r.report.pairs, ROWS * (ROWS - 1) / 2);
      assert.ok(Math.abs(r.report.epsilon - want.epsilon) < 1e-6, `browser ${r.report.epsilon} CLI ${want.epsilon}`);
      const wasm = r.report.peak_wasm_bytes;
      assert.ok(typeof wasm === "number" && wasm > 0, `peak_wasm_bytes ${wasm}`);
      console.log(`huge file (10 GiB, ${ROWS}×${DIM} bf16 past 4 GiB): browser ${browserMs} ms (report ${Math.round(r.report.timing_ms)} ms, kernel ${r.report.kernel}, peak wasm memory ${wasm} B = ${(wasm / 2 ** 20).toFixed(1)} MiB), CLI ${cliMs} ms (report ${Math.round(want.timing_ms)} ms${rss ? `, peak RSS ${(rss / 2 ** 20).toFixed(1)} MiB` : ""}); ε = ${want.epsilon}`);
      assert.ok(wasm < 300 * 1024 * 1024, `peak_wasm_bytes ${wasm} ≥ 300 MiB`);
      assert.deepEqual(b.errors, []);
      assert.deepEqual(b.foreignRequests, []);
    } finally { await b.close(); }
  } finally {
    rmSync(PATH, { force: true });
  }
});
