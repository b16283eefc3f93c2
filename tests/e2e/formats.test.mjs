// End to end: shards (with and without index, a stray file, a missing shard), a whole
// folder, GGUF (quantised, split) and .npy, each equal to the CLI's result on the same files.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readdirSync, rmSync, copyFileSync, mkdirSync } from "node:fs";
import { serve, openApp, analyseFiles, currentRun, finalReport, cli, cliReport, writeNpy, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

const within = (a, b, what) => assert.ok(Math.abs(a - b) < 1e-6, `${what}: browser ${a} CLI ${b}`);
const filesIn = (dir) => readdirSync(dir).sort().map((f) => join(dir, f));

function shards(name, ...args) {
  const dir = join(OUT, name);
  rmSync(dir, { recursive: true, force: true });
  cli("generate-shards", dir, "--rows", "6000", "--dim", "256", "--shards", "3", ...args);
  return dir;
}

test("shards with their index and a stray extra shard: only the index's shards count", async () => {
  const dir = shards("shards-indexed");
  const want = cliReport(dir);
  // A stray shard from another model lies beside them; it must not be mixed in.
  const stray = join(OUT, "stray");
  rmSync(stray, { recursive: true, force: true });
  cli("generate-shards", stray, "--rows", "500", "--dim", "256", "--shards", "4", "--seed", "9");
  copyFileSync(join(stray, "model-00004-of-00004.safetensors"), join(dir, "model-00004-of-00004.safetensors"));
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, filesIn(dir));
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.tensor, "model.embed_tokens.weight");
    assert.equal(r.report.rows, 6000);
    assert.match(r.report.format, /3 shards/);
    within(r.report.epsilon, want.epsilon, "ε");
    assert.equal(r.report.unembedding.tensor, "lm_head.weight");
    within(r.report.unembedding.mu_plus_2sigma, want.unembedding.mu_plus_2sigma, "unembedding μ+2σ");
    assert.equal(r.report.tied, false);
    assert.match(await b.page.textContent("section.picker"), /Not read.*model-00004-of-00004\.safetensors/);
    assert.deepEqual(b.errors, []);
  } finally { await b.close(); }
});

test("a whole folder through the folder picker, without an index: headers of all shards are scanned", async () => {
  const dir = shards("shards-no-index", "--no-index");
  const want = cliReport(dir);
  const b = await openApp(server);
  try {
    const before = await currentRun(b.page);
    await b.page.setInputFiles('[data-testid="folder-input"]', dir);
    const r = await finalReport(b.page, 600_000, before);
    assert.equal(r.status, "done", r.text);
    within(r.report.epsilon, want.epsilon, "ε");
    assert.deepEqual(b.errors, []);
  } finally { await b.close(); }
});

test("a shard named by the index but not given gets a message naming it", async () => {
  const dir = shards("shards-missing");
  const given = filesIn(dir).filter((f) => !f.endsWith("model-00001-of-00003.safetensors"));
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, given);
    assert.equal(r.status, "error", r.text);
    assert.match(r.text, /model\.embed_tokens\.weight.*model-00001-of-00003\.safetensors.*not among the files given/);
    assert.deepEqual(b.errors, []);
  } finally { await b.close(); }
});

for (const type of ["Q8_0", "Q6_K", "Q4_K", "F16"]) {
  test(`GGUF with a ${type} token_embd.weight equals the CLI`, async () => {
    const path = join(OUT, `model-${type}.gguf`);
    cli("generate-gguf", path, "--rows", "4096", "--dim", "512", "--type", type);
    const want = cliReport(path);
    const b = await openApp(server);
    try {
      const r = await analyseFiles(b.page, path);
      assert.equal(r.status, "done", r.text);
      assert.equal(r.report.tensor, "token_embd.weight");
      assert.equal(r.report.dtype, type);
      assert.equal(r.report.rows, 4096);
      within(r.report.epsilon, want.epsilon, "ε");
      assert.equal(r.report.unembedding?.tensor, "output.weight");
      assert.deepEqual(b.errors, []);
    } finally { await b.close(); }
  });
}

test("split GGUF: the parts together equal the CLI", async () => {
  const dir = join(OUT, "gguf-split");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cli("generate-gguf", join(dir, "model"), "--rows", "4096", "--dim", "512", "--type", "Q8_0", "--split", "3");
  const want = cliReport(dir);
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, filesIn(dir));
    assert.equal(r.status, "done", r.text);
    within(r.report.epsilon, want.epsilon, "ε");
    assert.deepEqual(b.errors, []);
  } finally { await b.close(); }
});

test(".npy float32 equals the CLI", async () => {
  const path = writeNpy(join(OUT, "embeddings.npy"), 3000, 200, 5);
  const want = cliReport(path);
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, path);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.rows, 3000);
    assert.equal(r.report.dim, 200);
    within(r.report.epsilon, want.epsilon, "ε");
    assert.deepEqual(b.errors, []);
  } finally { await b.close(); }
});
