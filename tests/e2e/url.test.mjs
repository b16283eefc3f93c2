// End to end: a model opened by URL (`?url=`, `?hf=`, the address field) is read with HTTP
// Range requests from a second local server on another origin (tests/e2e/range_server.mjs):
// the header and the embedding's bytes only, equal to the CLI's result; each way a host can fail
// gets its own message and the page stays usable; and Cancel and re-runs make no request at all.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { mkdirSync, rmSync, writeFileSync, copyFileSync, readdirSync, statSync } from "node:fs";
import { serve, launch, finalReport, currentRun, openApp, analyseFiles, fixture, cli, cliReport, writeNpy, OUT, ROOT } from "./harness.mjs";
import { startRangeServer } from "./range_server.mjs";

const TREE = join(OUT, "url-tree");
const EMBED = "model.embed_tokens.weight";
/** `remote::PROBE_BYTES`: the first request of every file. */
const PROBE = 65536;

let app, rs;
let large; // {path, headerEnd, embedding: [start, end), output: [start, end)}

/** Writes a safetensors file; `tensors`: [{name, rows, dim, data?: Float32Array}] (no data: zeros). */
function writeModel(path, tensors) {
  const header = {};
  let offset = 0;
  const datas = [];
  for (const t of tensors) {
    const bytes = t.rows * t.dim * 4;
    header[t.name] = { dtype: "F32", shape: [t.rows, t.dim], data_offsets: [offset, offset + bytes] };
    datas.push(t.data ? Buffer.from(t.data.buffer) : Buffer.alloc(bytes));
    offset += bytes;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(path, Buffer.concat([len, json, ...datas]));
  const headerEnd = 8 + json.length;
  const range = (name) => header[name].data_offsets.map((o) => o + headerEnd);
  return { path, headerEnd, range };
}

/** A seeded matrix with a common direction, so ε is not that of pure noise. */
function matrix(rows, dim, seed) {
  let s = seed >>> 0 || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32 - 0.5; };
  const m = new Float32Array(rows * dim);
  for (let i = 0; i < m.length; i++) m[i] = next() + (i % dim < 4 ? 0.2 : 0);
  return m;
}

before(async () => {
  app = await serve(join(ROOT, "dist"));
  rs = await startRangeServer(TREE);
  rmSync(TREE, { recursive: true, force: true });
  mkdirSync(TREE, { recursive: true });
  // 32 MiB of another tensor stored before the embedding, and a separate output matrix after it.
  const m = writeModel(join(TREE, "large.safetensors"), [
    { name: "model.layers.0.mlp.up_proj.weight", rows: 8192, dim: 1024 },
    { name: EMBED, rows: 4096, dim: 128, data: matrix(4096, 128, 7) },
    { name: "lm_head.weight", rows: 4096, dim: 128, data: matrix(4096, 128, 8) },
  ]);
  large = { path: m.path, headerEnd: m.headerEnd, embedding: m.range(EMBED), output: m.range("lm_head.weight") };
  cli("generate-shards", join(TREE, "shards2"), "--rows", "6000", "--dim", "256", "--shards", "2", "--dtype", "F32");
  // A Hugging Face-like tree: org/name/resolve/main/… (a single file), org/sharded/… (an index).
  const single = join(TREE, "org", "name", "resolve", "main");
  mkdirSync(single, { recursive: true });
  copyFileSync(large.path, join(single, "model.safetensors"));
  const sharded = join(TREE, "org", "sharded", "resolve", "main");
  mkdirSync(sharded, { recursive: true });
  for (const f of readdirSync(join(TREE, "shards2"))) copyFileSync(join(TREE, "shards2", f), join(sharded, f));
  cli("generate-gguf", join(TREE, "model-q8.gguf"), "--rows", "8192", "--dim", "512", "--type", "Q8_0");
  writeNpy(join(TREE, "embeddings.npy"), 3000, 200, 5);
});
after(async () => { app?.close(); await rs?.close(); });

const within = (a, b, what) => assert.ok(Math.abs(a - b) < 1e-6, `${what}: browser ${a} CLI ${b}`);

/** Only the range server's origin may be asked, and never with a preflight or without a Range. */
function cleanUrlRun(b, allowedErrors = []) {
  const unexpected = b.errors.filter((e) => !allowedErrors.some((p) => p.test(e)));
  assert.deepEqual(unexpected, [], "console, page or worker errors");
  assert.deepEqual(b.foreignRequests.filter((u) => !u.startsWith(rs.origin)), [], "requests to other origins");
  assert.deepEqual(rs.log.filter((e) => e.method === "OPTIONS"), [], "no CORS preflight");
  for (const e of rs.log.filter((e) => e.method === "GET")) {
    assert.match(e.range ?? "", /^bytes=\d+-\d+$/, `GET ${e.path} asks for one range`);
  }
}

test("?url= reads the header and only the embedding's bytes, past a 32 MiB tensor, and gives the CLI's ε", async () => {
  const want = cliReport(large.path);
  rs.reset();
  const b = await launch(app.url);
  try {
    const url = `${rs.url}ok/large.safetensors`;
    await b.page.goto(`${app.url}?url=${encodeURIComponent(url)}`);
    const r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.tensor, EMBED);
    assert.equal(r.report.exact, true);
    for (const k of ["epsilon", "mu", "sigma"]) within(r.report[k], want[k], k);
    assert.equal(r.report.source_url, url);
    const served = rs.bytesSent("/ok/large.safetensors");
    const embeddingBytes = large.embedding[1] - large.embedding[0];
    const gets = rs.log.filter((e) => e.method === "GET").length;
    console.log(`large-tensor case: ${served} bytes served in ${gets} requests (header ${large.headerEnd} B, embedding ${embeddingBytes} B, file ${statSync(large.path).size} B)`);
    assert.equal(r.report.bytes_fetched, served, "the report counts what the server sent");
    // The probe (64 KiB, header included) plus the embedding, each byte once.
    assert.ok(served <= PROBE + embeddingBytes, `${served} > ${PROBE} + ${embeddingBytes}`);
    assert.ok(served >= embeddingBytes, "all rows were read");
    for (const e of rs.log.filter((e) => e.method === "GET" && e.range !== `bytes=0-${PROBE - 1}`)) {
      const [a, z] = e.range.slice(6).split("-").map(Number);
      assert.ok(a >= large.embedding[0] && z < large.embedding[1], `${e.range} lies outside the embedding ${large.embedding}`);
    }
    // Bandwidth is spared: the output matrix is neither sampled nor compared.
    assert.equal(r.report.unembedding ?? null, null);
    assert.equal(r.report.tied ?? null, null);
    assert.match(r.report.tied_evidence, /not compared/);
    // The permalink carries the address, so its reader can run the analysis again.
    const href = await b.page.getAttribute('[data-testid="permalink"]', "href");
    assert.ok(href.includes(`?url=${encodeURIComponent(url)}#r=`), href);
    cleanUrlRun(b);
  } finally { await b.close(); }
});

test("?url= on a model.safetensors.index.json reads both shards next to it and equals the CLI", async () => {
  const dir = join(TREE, "shards2");
  const want = cliReport(dir);
  rs.reset();
  const b = await launch(app.url);
  try {
    await b.page.goto(`${app.url}?url=${encodeURIComponent(`${rs.url}ok/shards2/model.safetensors.index.json`)}`);
    const r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    assert.match(r.report.format, /2 shards/);
    assert.equal(r.report.rows, 6000);
    for (const k of ["epsilon", "mu", "sigma"]) within(r.report[k], want[k], k);
    const served = rs.bytesSent("/ok/shards2/");
    const files = rs.log.map((e) => e.path.split("/").pop());
    for (const f of ["model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]) {
      assert.ok(files.includes(f), `${f} was asked for`);
    }
    const embeddingBytes = 6000 * 256 * 4;
    console.log(`two-shard index case: ${served} bytes served in ${rs.log.length} requests (embedding ${embeddingBytes} B)`);
    assert.equal(r.report.bytes_fetched, served);
    assert.ok(served <= 3 * PROBE + embeddingBytes, `${served} bytes`);
    cleanUrlRun(b);
  } finally { await b.close(); }
});

test("?url= opens a quantised .gguf and a .npy like the CLI", async () => {
  const b = await launch(app.url);
  try {
    for (const name of ["model-q8.gguf", "embeddings.npy"]) {
      const want = cliReport(join(TREE, name));
      rs.reset();
      await b.page.goto(`${app.url}?url=${encodeURIComponent(`${rs.url}ok/${name}`)}`);
      const r = await finalReport(b.page);
      assert.equal(r.status, "done", `${name}: ${r.text}`);
      assert.equal(r.report.tensor, want.tensor);
      for (const k of ["epsilon", "mu", "sigma"]) within(r.report[k], want[k], `${name} ${k}`);
      const size = statSync(join(TREE, name)).size;
      console.log(`${name}: ${rs.bytesSent()} of ${size} bytes served in ${rs.log.length} requests`);
      assert.equal(r.report.bytes_fetched, rs.bytesSent());
    }
    cleanUrlRun(b);
  } finally { await b.close(); }
});

test("?hf=org/name with ?hf_endpoint= expands to resolve/ URLs: the index, else model.safetensors", async () => {
  const single = cliReport(large.path);
  const sharded = cliReport(join(TREE, "shards2"));
  rs.reset();
  const b = await launch(app.url);
  try {
    const endpoint = encodeURIComponent(`${rs.url}ok`);
    await b.page.goto(`${app.url}?hf=org/name&hf_endpoint=${endpoint}`);
    let r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    within(r.report.epsilon, single.epsilon, "ε");
    assert.equal(r.report.source_url, `${rs.url}ok/org/name/resolve/main/model.safetensors`);
    assert.deepEqual(
      rs.log.map((e) => `${e.status} ${e.path}`).slice(0, 2),
      ["404 /ok/org/name/resolve/main/model.safetensors.index.json", "206 /ok/org/name/resolve/main/model.safetensors"],
    );
    await b.page.goto(`${app.url}?hf=org/sharded@main&hf_endpoint=${endpoint}`);
    r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    within(r.report.epsilon, sharded.epsilon, "ε");
    assert.equal(r.report.source_url, `${rs.url}ok/org/sharded/resolve/main/model.safetensors.index.json`);
    // The index's 404 is the one failed load (Chromium logs it).
    cleanUrlRun(b, [/Failed to load resource: the server responded with a status of 404/]);
    assert.ok(b.errors.length <= 1, b.errors.join("\n"));
  } finally { await b.close(); }
});

test("no CORS, 404, 401, no Range support and a cut connection each get their message; the page goes on", async () => {
  const cutAt = large.embedding[0] + 200_000;
  const cases = [
    { path: "nocors/large.safetensors", message: /either its server does not let other sites read it \(no CORS header\), or the host cannot be reached/, console: /blocked by CORS policy|Failed to load resource: net::ERR_FAILED/ },
    { path: "ok/missing.safetensors", message: /missing\.safetensors was not found \(HTTP 404\)/, console: /status of 404/ },
    { path: "gated/large.safetensors", message: /needs permission \(HTTP 401\): the model is gated or private/, console: /status of 401/ },
    { path: "norange/large.safetensors", message: /the server ignores Range requests/, console: /net::ERR_ABORTED|aborted/i },
    { path: `cut/${cutAt}/large.safetensors`, message: /connection dropped while reading \d+ bytes at offset \d+ of large\.safetensors .* again when retried/, console: /net::ERR_|NetworkError|Failed to load resource/ },
  ];
  rs.reset();
  const b = await openApp(app);
  try {
    for (const c of cases) {
      const before = await currentRun(b.page);
      const errorsBefore = b.errors.length;
      await b.page.fill('[data-testid="url-input"]', `${rs.url}${c.path}`);
      await b.page.click('[data-testid="url-open"]');
      const r = await finalReport(b.page, 60_000, before);
      assert.equal(r.status, "error", `${c.path}: ${r.text}`);
      assert.match(r.text, c.message, c.path);
      const logged = b.errors.splice(errorsBefore);
      console.log(`${c.path}: "${r.text.slice(0, 400)}"`);
      for (const e of logged) assert.match(e, c.console, `${c.path}: unexpected console error`);
      // The page still analyses: a demo, chosen from the list.
      const again = await currentRun(b.page);
      await b.page.selectOption('[data-testid="demo-select"]', "random-init");
      await b.page.click('[data-testid="demo-run"]');
      const d = await finalReport(b.page, 120_000, again);
      assert.equal(d.status, "done", `after ${c.path}: ${d.text}`);
    }
    // A cut answer was retried once: two requests for the same range past the cut.
    const cut = rs.log.filter((e) => e.path.startsWith("/cut/") && Number(e.range?.split("-")[1]) >= cutAt);
    assert.equal(cut.length, 2, JSON.stringify(cut));
    assert.equal(cut[0].range, cut[1].range);
    cleanUrlRun(b, cases.map((c) => c.console));
  } finally { await b.close(); }
});

test("the address field takes an org/name id and opens it like ?hf=", async () => {
  rs.reset();
  const b = await launch(app.url);
  try {
    await b.page.goto(`${app.url}?hf_endpoint=${encodeURIComponent(`${rs.url}ok`)}`);
    await finalReport(b.page);
    const before = await currentRun(b.page);
    await b.page.fill('[data-testid="url-input"]', "org/sharded");
    await b.page.click('[data-testid="url-open"]');
    const r = await finalReport(b.page, 120_000, before);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.source_url, `${rs.url}ok/org/sharded/resolve/main/model.safetensors.index.json`);
    cleanUrlRun(b);
  } finally { await b.close(); }
});

test("an analysis, a Cancel and two more runs make no request at all and start no new worker", async () => {
  const small = fixture("small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32");
  const big = fixture("random-32000x2048-bf16.safetensors", "--kind", "random-init", "--rows", "32000", "--dim", "2048");
  const b = await launch(app.url);
  try {
    // Count Worker constructions in the page.
    await b.page.addInitScript(() => {
      const W = window.Worker;
      window.__workers = 0;
      window.Worker = class extends W { constructor(...a) { super(...a); window.__workers += 1; } };
    });
    const requests = [];
    const record = (r) => requests.push(r.url());
    b.page.on("request", record);
    await b.page.goto(app.url);
    const first = await finalReport(b.page);
    assert.equal(first.status, "done", first.text);
    // The recorder sees the worker's own loads: a re-download would not go unnoticed.
    assert.ok(requests.some((u) => /\/worker(_relaxed)?_bg(-[0-9a-f]+)?\.wasm$/.test(u)), `worker loads seen: ${requests.join(" ")}`);
    assert.equal(await b.page.evaluate(() => window.__workers), 1);
    let r = await analyseFiles(b.page, small);
    assert.equal(r.status, "done", r.text);
    // A dropped file is split over the pool (`?workers`, default the cores): its helpers start with
    // the first file, once; from then on nothing is loaded again.
    const pool = await b.page.evaluate(() => window.__workers);
    assert.equal(pool, r.report.workers, "one worker per share");
    requests.length = 0;
    await b.page.setInputFiles('[data-testid="file-input"]', big);
    await b.page.waitForSelector('[data-testid="running-epsilon"]:has-text("running ε")', { timeout: 60_000 });
    const t0 = Date.now();
    await b.page.click('[data-testid="cancel"]');
    await b.page.waitForSelector('[data-testid="report"][data-status="cancelled"]', { timeout: 5_000 });
    const cancelMs = Date.now() - t0;
    r = await analyseFiles(b.page, small);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.rows, 2000);
    assert.ok(Math.abs(r.report.epsilon - cliReport(small).epsilon) < 1e-6);
    console.log(`cancel acknowledged in ${cancelMs} ms; next run took ${r.report.timing_ms.toFixed(0)} ms`);
    assert.deepEqual(requests, [], "requests after the page loaded");
    assert.equal(await b.page.evaluate(() => window.__workers), pool, "the workers were kept");
    assert.deepEqual(b.errors, []);
    assert.deepEqual(b.foreignRequests, []);
  } finally { await b.close(); }
});

test("a Cancel the worker cannot hear (stuck in a hung read) replaces it after 2 s, and the next run works", async () => {
  const small = fixture("small-2000x64-f32.safetensors", "--rows", "2000", "--dim", "64", "--dtype", "F32");
  rs.reset();
  const b = await launch(app.url);
  try {
    await b.page.addInitScript(() => {
      const W = window.Worker;
      window.__workers = 0;
      window.Worker = class extends W { constructor(...a) { super(...a); window.__workers += 1; } };
    });
    const stallAt = large.embedding[0] + 100_000;
    await b.page.goto(`${app.url}?url=${encodeURIComponent(`${rs.url}stall/${stallAt}/large.safetensors`)}`);
    // The headers came; the progress line says how much was downloaded.
    await b.page.waitForSelector('[data-testid="progress"]:has-text(" fetched")', { timeout: 30_000 });
    const hung = () => rs.log.some((e) => e.status === 0 && e.path.startsWith("/stall/"));
    for (let i = 0; i < 300 && !hung(); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(hung(), "a read is hanging");
    const t0 = Date.now();
    await b.page.click('[data-testid="cancel"]');
    await b.page.waitForSelector('[data-testid="report"][data-status="cancelled"]', { timeout: 5_000 });
    // Started at once, before the replacement: it must not be lost with the stuck worker.
    const r = await analyseFiles(b.page, small, 60_000);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.rows, 2000);
    const waited = Date.now() - t0;
    console.log(`stuck worker replaced; the next run was done ${waited} ms after Cancel`);
    assert.ok(waited >= 2000, `done after ${waited} ms: the stuck worker cannot have run it`);
    // The URL run had one worker; the file's run adds the pool's helpers (`?workers`, default the cores).
    assert.equal(await b.page.evaluate(() => window.__workers), 2 + (r.report.workers - 1), "one replacement");
    cleanUrlRun(b);
  } finally { await b.close(); }
});
