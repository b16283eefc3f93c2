// What is analysed is what the user meant: files without an input token embedding start no
// analysis (data-status="choose", the picker and a message naming the file to drop instead); a
// tensor chosen by hand runs and is labelled as not the paper's ε. Also: the release build carries
// no test hook, and the page's requests are only GETs of its own static files.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { assertClean, serve, openApp, analyseFiles, finalReport, currentRun, cli, cliReport, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

/** A two-shard set written by the fixture CLI (the embedding in the first shard, lm_head in the
 *  last); returns the second shard's path and the first's file name. */
function twoShards() {
  const dir = join(OUT, "two-shards");
  const second = join(dir, "model-00002-of-00002.safetensors");
  if (!existsSync(second)) {
    cli("generate-shards", dir, "--rows", "3000", "--dim", "64", "--shards", "2", "--no-index", "--seed", "4");
  }
  return { second, first: "model-00001-of-00002.safetensors" };
}

test("the second shard alone: no analysis, data-status=choose, the message names the first shard; a chosen tensor runs labelled", async () => {
  const { second, first } = twoShards();
  const b = await openApp(server);
  try {
    const before = await currentRun(b.page);
    await b.page.setInputFiles('[data-testid="file-input"]', [second]);
    const r = await finalReport(b.page, 120_000, before);
    assert.equal(r.status, "choose", r.text);
    assert.equal(r.report, null, "no Report for files without an input embedding");
    assert.equal(await b.page.locator('[data-testid="epsilon"]').count(), 0, "no ε on screen");
    const message = await b.page.textContent('[data-testid="choose-message"]');
    assert.match(message, new RegExp(first.replace(/[.]/g, "\\.")), message);
    assert.match(message, /no input token embedding/);
    // The picker offers the output matrix for what it is.
    const label = await b.page.$eval('[data-testid="tensor-select"] option[value="lm_head.weight"]', (o) => o.textContent);
    assert.match(label, /output matrix, not the paper's ε/);

    // Chosen by hand: it runs, and the card says it is not the paper's ε.
    const run = await currentRun(b.page);
    await b.page.selectOption('[data-testid="tensor-select"]', "lm_head.weight");
    await b.page.click('[data-testid="tensor-run"]');
    const done = await finalReport(b.page, 120_000, run);
    assert.equal(done.status, "done", done.text);
    assert.equal(done.report.tensor, "lm_head.weight");
    assert.equal(done.report.tensor_reason, "chosen by you");
    assert.equal(done.report.tensor_role, "output_matrix");
    assert.match(await b.page.textContent('[data-testid="not-embedding"]'), /not comparable with the paper's Table 1/);
    // The picker now names the tensor chosen, no longer the refusal.
    assert.match(await b.page.textContent(".picker"), /Chosen: lm_head\.weight \(chosen by you\)/);
    assert.equal(await b.page.locator('[data-testid="choose-message"]').count(), 0);
    const native = cliReport(second, "--tensor", "lm_head.weight");
    assert.ok(Math.abs(done.report.epsilon - native.epsilon) < 1e-7, `${done.report.epsilon} vs CLI ${native.epsilon}`);
    assertClean(b);
  } finally {
    await b.close();
  }
});

test("the CLI refuses the second shard alone with the same message and the candidates, unless --tensor names one", () => {
  const { second, first } = twoShards();
  let failed = null;
  try {
    cli("analyze", second, "--json");
  } catch (e) {
    failed = e;
  }
  assert.ok(failed, "the CLI exits non-zero");
  const stderr = String(failed.stderr);
  assert.ok(stderr.includes(first) && stderr.includes("lm_head.weight"), stderr);
  assert.equal(cliReport(second, "--tensor", "lm_head.weight").tensor_role, "output_matrix");
});

test("the release build has no test hook; the test build has them", () => {
  const wasm = (dir) => readdirSync(join(ROOT, dir)).filter((f) => f.endsWith(".wasm")).map((f) => join(ROOT, dir, f));
  const holds = (file, text) => readFileSync(file).includes(Buffer.from(text));
  const release = wasm("dist");
  assert.ok(release.length >= 3, "the page and both workers");
  for (const f of release) {
    for (const hook of ["crash_after_rows", "test crash after", "test out of memory"]) {
      assert.ok(!holds(f, hook), `${f} contains the test hook "${hook}"`);
    }
  }
  // The check can fail: the end-to-end build (cargo feature test-hooks) has them.
  const hooked = wasm("target/e2e-dist");
  assert.ok(hooked.some((f) => holds(f, "crash_after_rows")), "the test build's page parses ?crash_after_rows");
  assert.ok(hooked.some((f) => holds(f, "test crash after")), "the test build's worker can crash");
});

test("after the page has loaded, its only requests are GETs of its own static files", async () => {
  const b = await openApp(server);
  try {
    const loaded = b.requests.length;
    await analyseFiles(b.page, [twoShards().second]);
    const file = join(OUT, "choose-small.safetensors");
    if (!existsSync(file)) cli("generate", file, "--rows", "2000", "--dim", "64");
    const r = await analyseFiles(b.page, [file]);
    assert.equal(r.status, "done", r.text);
    // Everything after the load, and before it, is a GET of the site's own files.
    assert.deepEqual(b.requests.slice(loaded).filter((q) => !q.url.startsWith(b.origin)), []);
    assertClean(b);
    assert.ok(b.requests.length > 0, "requests were recorded");
  } finally {
    await b.close();
  }
});
