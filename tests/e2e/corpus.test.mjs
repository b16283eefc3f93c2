// The malformed-file corpus (src/fixtures/corpus.rs, written by `orthoscope-fixtures corpus`):
// every case is dropped into one page in turn. Each must end in a readable message (role=alert)
// that mentions what is wrong, or in the result the CLI gives; no console, page or worker error may
// escape; and a valid file analysed after the whole corpus gives the CLI's ε.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readFileSync, rmSync } from "node:fs";
import { assertClean, serve, openApp, analyseFiles, fixture, cliReport, cli, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

test("every corpus input dropped in turn gets a readable message or the CLI's result, and the page recovers", async () => {
  const dir = join(OUT, "corpus");
  rmSync(dir, { recursive: true, force: true });
  cli("corpus", "--out", dir);
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  assert.ok(manifest.length >= 40, `${manifest.length} cases`);
  const b = await openApp(server);
  const started = Date.now();
  try {
    for (const c of manifest) {
      const files = c.files.map((f) => join(dir, c.name, f));
      const r = await analyseFiles(b.page, files, 60_000);
      if (c.expect === "error") {
        assert.equal(r.status, "error", `${c.name}: ${r.text}`);
        const alert = b.page.locator('[data-testid="error"]');
        assert.equal(await alert.getAttribute("role"), "alert", `${c.name}: the message is announced`);
        const message = await alert.textContent();
        assert.ok(message.includes(c.mention), `${c.name}: "${message}" does not mention "${c.mention}"`);
      } else {
        assert.equal(r.status, "done", `${c.name}: ${r.text}`);
        const want = cliReport(join(dir, c.name));
        assert.equal(r.report.rows_used, want.rows_used, c.name);
        assert.ok(Math.abs(r.report.epsilon - want.epsilon) < 1e-6, `${c.name}: ε ${r.report.epsilon} vs CLI ${want.epsilon}`);
      }
      assert.deepEqual(b.errors, [], `${c.name}: console, page or worker errors`);
    }
    const good = fixture("small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32");
    const r = await analyseFiles(b.page, good);
    assert.equal(r.status, "done", r.text);
    assert.ok(Math.abs(r.report.epsilon - cliReport(good).epsilon) < 1e-6, "a valid file after the corpus");
    // A wasm memory only grows: the lead worker's size now is its high-water mark over the opening
    // demo, the whole corpus and this file (under 600 MB whatever a header claims).
    const wasm = r.report.peak_wasm_bytes;
    assert.ok(typeof wasm === "number" && wasm > 0 && wasm < 600e6, `peak_wasm_bytes ${wasm}`);
    console.log(`${manifest.length} corpus cases in ${Date.now() - started} ms; lead worker's wasm memory after them all: ${wasm} bytes`);
    assertClean(b);
  } finally { await b.close(); }
});
