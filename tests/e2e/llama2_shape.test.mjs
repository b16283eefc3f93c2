// The "done when": a generated 32000×4096 bf16 file (Llama 2 7B's shape, paper §5) gives its
// exact ε in the browser, equal to the CLI's. Prints both wall times; asserts no time.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { serve, openApp, analyseFiles, fixture, cliReport, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

test("Llama-2-7B-shaped 32000×4096 bf16: exact ε in the browser equals the CLI's", async () => {
  const path = fixture("llama2-shape-32000x4096-bf16.safetensors", "--rows", "32000", "--dim", "4096", "--dtype", "BF16", "--seed", "7");
  let t = Date.now();
  const want = cliReport(path);
  const cliMs = Date.now() - t;
  const b = await openApp(server);
  try {
    t = Date.now();
    const r = await analyseFiles(b.page, path, 1_800_000);
    const browserMs = Date.now() - t;
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.exact, true);
    assert.equal(r.report.rows, 32000);
    assert.equal(r.report.dim, 4096);
    assert.equal(r.report.pairs, 32000 * 31999 / 2);
    assert.ok(Math.abs(r.report.epsilon - want.epsilon) < 1e-6, `browser ${r.report.epsilon} CLI ${want.epsilon}`);
    console.log(`llama2-shape exact pass: browser ${browserMs} ms (report ${Math.round(r.report.timing_ms)} ms, kernel ${r.report.kernel}, wasm memory ${r.report.peak_wasm_bytes} B), CLI ${cliMs} ms (report ${Math.round(want.timing_ms)} ms)`);
    assert.deepEqual(b.errors, []);
    assert.deepEqual(b.foreignRequests, []);
  } finally { await b.close(); }
});
