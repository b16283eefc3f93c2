// Why ε is what it is: the geometry side by side in the compare view, the tail
// explorer with token strings and its most opposed pairs, centred statistics, and the unembedding views.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { assertClean, serve, launch, finalReport, openApp, analyseFiles, writeSafetensors, cli, cliReport, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => { mkdirSync(OUT, { recursive: true }); server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

/** The compare view's geometry rows: {hasGeometry, text}. */
function geometryRows(page) {
  return page.$$eval('[data-testid="compare-geometry-row"]', (rs) =>
    rs.map((r) => ({ hasGeometry: r.getAttribute("data-has-geometry") === "true", text: r.textContent })));
}

test("the compare view reads each result's geometry side by side; a result from a shared link says it has none", async () => {
  const b = await openApp(server);
  let link;
  try {
    const file = writeSafetensors(join(OUT, "explain-cmp.safetensors"), [{ name: "model.embed_tokens.weight", rows: 1200, dim: 48, shift: 0.1 }], 21);
    const r = await analyseFiles(b.page, file);
    assert.equal(r.status, "done", r.text);
    const g = r.report.geometry;
    assert.ok(g, "an exact pass carries its geometry");
    const rows = await geometryRows(b.page);
    assert.equal(rows.length, 2, "the opening demo and the file");
    assert.ok(rows.every((x) => x.hasGeometry), "both computed here, both with geometry");
    const last = rows[1].text;
    // The key numbers of this result's geometry are in its row, to 3 significant digits.
    const sig3 = (x) => Number(x.toPrecision(3)).toString();
    assert.ok(last.includes(sig3(g.participation_ratio)) || last.includes(g.participation_ratio.toPrecision(3)), `participation ratio in ${last}`);
    assert.ok(last.includes(`${(100 * g.eigenvalues[0] / g.eigenvalues.reduce((a, b) => a + b, 0)).toFixed(1)} %`), `λ₁ share in ${last}`);
    assert.ok(last.includes(String(g.top_mean_dimensions[0].dim)), "top dimension in the row");
    assert.match(last, /One direction carries \d+ % of the second moment/);
    link = await b.page.getAttribute('[data-testid="permalink"]', "href");
    assertClean(b);
  } finally { await b.close(); }
  // A fresh browser opening the link: the row comes from the fragment, which carries no spectrum.
  const c = await launch(server.url);
  try {
    await c.page.goto(new URL(link, server.url).href);
    const r = await finalReport(c.page);
    assert.equal(r.status, "done");
    const rows = await geometryRows(c.page);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].hasGeometry, false);
    assert.match(rows[0].text, /not in shared links/);
    await c.page.locator('[data-testid="compare-geometry"]').screenshot({ path: join(OUT, "explain-compare-geometry.png") });
    assertClean(c);
  } finally { await c.close(); }
});

test("a tokenizer.json dropped with the weights names the rows: the top pairs and a token's neighbours by its string, as the CLI finds them", async () => {
  // A Hugging Face folder as users drop it: weights and tokenizer.json (BPE vocabulary, one added token).
  const dir = join(OUT, "explain-tokenizer");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const rows = 400;
  const weights = writeSafetensors(join(dir, "model.safetensors"), [{ name: "model.embed_tokens.weight", rows, dim: 32, shift: 0.15 }], 33);
  const vocab = Object.fromEntries(Array.from({ length: rows - 1 }, (_, i) => [`Ġw${i + 1}`, i + 1]));
  const tokenizer = join(dir, "tokenizer.json");
  writeFileSync(tokenizer, JSON.stringify({ added_tokens: [{ id: 0, content: "<|begin|>" }], model: { type: "BPE", vocab } }));
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, [weights, tokenizer]);
    assert.equal(r.status, "done", r.text);
    const name = (row) => (row === 0 ? "<|begin|>" : `Ġw${row}`);
    const pairs = r.report.top_pairs;
    assert.ok(pairs.length > 0);
    for (const p of pairs) assert.deepEqual([p.a_token, p.b_token], [name(p.a), name(p.b)], "token strings from tokenizer.json");
    // Shown with byte-level BPE's Ġ as a visible space (the Report keeps the token as spelled).
    const shownAs = (t) => t.replace(/^Ġ/, "␣");
    const table = await b.page.textContent('[data-testid="top-pairs"]');
    assert.ok(table.includes(`“${shownAs(name(pairs[0].a))}” (#${pairs[0].a})`), table.slice(0, 300));
    assert.ok(!table.includes("Ġ"), "no Ġ left on show");
    // By its string, the added token included: the CLI's neighbours over the same two files.
    for (const token of ["Ġw17", "<|begin|>"]) {
      await b.page.fill('[data-testid="explore-query"]', token);
      await b.page.click('[data-testid="explore-find"]');
      const want = JSON.parse(cli("neighbours", weights, tokenizer, "--token", token, "--k", "10", "--json"));
      await b.page.waitForFunction((row) => (document.querySelector('[data-testid="neighbours"] caption')?.textContent || "").includes(`(#${row})`), want.row);
      const shown = await b.page.$$eval('[data-testid="neighbours"] tbody tr', (rs) => rs.map((r) => r.children[1].textContent));
      assert.deepEqual(shown, want.neighbours.map((n) => `“${shownAs(n.token)}” (#${n.row})`), token);
    }
    assert.equal(await b.page.textContent('[data-testid="explore-error"]'), "");
    assertClean(b);
  } finally { await b.close(); }
});

test("the tail explorer lists the GGUF vocabulary's tokens, finds a token's neighbours as the CLI does, and the centred pass and unembedding views agree with the CLI", async () => {
  const file = join(OUT, "explain-vocab.gguf");
  cli("generate-gguf", file, "--rows", "2000", "--dim", "64", "--type", "F32", "--kind", "class1-like", "--seed", "5");
  const want = cliReport(file, "--centred");
  const b = await openApp(server, "?demo=class1-like");
  try {
    const r = await analyseFiles(b.page, file);
    assert.equal(r.status, "done", r.text);
    const pairs = r.report.top_pairs;
    assert.equal(pairs.length, 20);
    assert.deepEqual(pairs.map((p) => [p.a, p.b]), want.top_pairs.map((p) => [p.a, p.b]), "the page's top pairs are the CLI's");
    assert.equal(pairs[0].a_token, `tok${pairs[0].a}`, "token strings from tokenizer.ggml.tokens");
    // The top-pairs table names tokens and highlights pairs above ε.
    const table = await b.page.textContent('[data-testid="top-pairs"]');
    assert.ok(table.includes(`“tok${pairs[0].a}” (#${pairs[0].a})`), table.slice(0, 300));
    const above = await b.page.locator('[data-testid="top-pairs"] tr[data-above="true"]').count();
    assert.equal(above, pairs.filter((p) => p.cosine > r.report.epsilon).length);
    assert.ok(above > 0, "a class-1-like matrix has pairs above ε");

    // Nearest neighbours of a token typed by its string: the CLI's list.
    await b.page.fill('[data-testid="explore-query"]', "tok42");
    await b.page.click('[data-testid="explore-find"]');
    await b.page.waitForFunction(() => document.querySelectorAll('[data-testid="neighbours"] tbody tr').length === 10);
    const cliNeighbours = JSON.parse(cli("neighbours", file, "--token", "tok42", "--k", "10", "--json"));
    assert.equal(cliNeighbours.row, 42);
    const shown = await b.page.$$eval('[data-testid="neighbours"] tbody tr', (rs) => rs.map((r) => r.children[1].textContent));
    assert.deepEqual(shown, cliNeighbours.neighbours.map((n) => `“${n.token}” (#${n.row})`));
    // An unknown token says so.
    await b.page.fill('[data-testid="explore-query"]', "no-such-token");
    await b.page.click('[data-testid="explore-find"]');
    await b.page.waitForFunction(() => document.querySelector('[data-testid="explore-error"]').textContent.includes("no token is spelled"));
    assert.equal(await b.page.locator('[data-testid="neighbours"]').count(), 0, "the previous token's table is gone, not left under the error");
    await b.page.locator('[data-testid="explorer"]').screenshot({ path: join(OUT, "explain-tail-explorer.png") });

    // The centred pass on request: the CLI's numbers, labelled as not the paper's ε.
    await b.page.click('[data-testid="centred-start"]');
    await b.page.waitForSelector('[data-testid="centred"]', { timeout: 120_000 });
    const after = await finalReport(b.page, 10_000, r.run - 1);
    assert.ok(Math.abs(after.report.centred.mu - want.centred.mu) < 1e-9, `${after.report.centred.mu} vs ${want.centred.mu}`);
    assert.ok(Math.abs(after.report.centred.epsilon - want.centred.epsilon) < 1e-9);
    assert.match(await b.page.textContent('[data-testid="explorer"]'), /Not the paper's ε/);

    // Unembedding views: output.weight is separate and of the same shape.
    const a = r.report.unembedding.alignment;
    assert.equal(a.tokens, want.unembedding.alignment.tokens);
    assert.ok(Math.abs(a.mean - want.unembedding.alignment.mean) < 1e-12);
    assert.match(await b.page.textContent('[data-testid="token-alignment"]'), /over 2000 tokens/);
    for (const id of ["unembedding-histogram", "token-alignment-histogram"]) {
      const alt = await b.page.getAttribute(`[data-testid="${id}"]`, "aria-label");
      assert.match(alt ?? "", /not the paper's ε/, `${id} is labelled`);
    }
    await b.page.locator('[data-testid="unembedding"]').screenshot({ path: join(OUT, "explain-unembedding.png") });
    assertClean(b);
  } finally { await b.close(); }
});

test("planted antipodal rows (u and −2u) lead the explorer's most opposed pairs, signed, as the CLI lists them", async () => {
  const rows = 400, dim = 64;
  const file = writeSafetensors(join(OUT, "explain-antipodal.safetensors"), [{ name: "model.embed_tokens.weight", rows, dim }], 41);
  // Row 9 becomes −2 × row 2 (not unit length, as a dictionary's decoder rows are not).
  const bytes = readFileSync(file);
  const data = 8 + Number(bytes.readBigUInt64LE(0));
  for (let c = 0; c < dim; c++) bytes.writeFloatLE(-2 * bytes.readFloatLE(data + (2 * dim + c) * 4), data + (9 * dim + c) * 4);
  writeFileSync(file, bytes);
  const want = cliReport(file);
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, file);
    assert.equal(r.status, "done", r.text);
    const opposed = r.report.antipodal_pairs;
    assert.equal(opposed.length, 20);
    assert.deepEqual([opposed[0].a, opposed[0].b], [2, 9], "the planted pair first");
    assert.ok(opposed[0].cosine < -0.99999, String(opposed[0].cosine));
    assert.deepEqual(opposed.map((p) => [p.a, p.b]), want.antipodal_pairs.map((p) => [p.a, p.b]), "the page's list is the CLI's");
    // The second list, beside the most similar pairs: signed cosines, the near-antipodal one marked.
    const table = '[data-testid="antipodal-pairs"]';
    const first = await b.page.$eval(`${table} tbody tr`, (tr) => ({ opposed: tr.getAttribute("data-opposed"), cells: [...tr.children].map((td) => td.textContent) }));
    assert.deepEqual(first.cells.slice(0, 3), ["1", "#2", "#9"]);
    assert.match(first.cells[3], /^-(1\.000|0\.9999)/);
    assert.equal(first.opposed, "true");
    const caption = await b.page.textContent(`${table} caption`);
    assert.match(caption, /most opposed pairs .* from a sample of [\d,]+ pairs/);
    const signs = await b.page.$$eval(`${table} tbody tr`, (rs) => rs.map((r) => r.children[3].textContent));
    assert.ok(signs.every((t) => /^[+-]/.test(t)), signs.join(" "));
    assert.ok(await b.page.locator('[data-testid="top-pairs"]').isVisible(), "the most similar pairs are still listed");
    await b.page.locator(table).screenshot({ path: join(OUT, "explain-antipodal-pairs.png") });
    assertClean(b);
  } finally { await b.close(); }
});

test("?centred=1 computes the centred statistics after an exact result, with progress", async () => {
  const b = await launch(server.url);
  try {
    await b.page.goto(server.url + "?demo=class1-like&centred=1");
    const r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    await b.page.waitForSelector('[data-testid="centred"]', { timeout: 300_000 });
    const done = await finalReport(b.page, 10_000, r.run - 1);
    const c = done.report.centred;
    assert.ok(c && c.rows_used === done.report.rows_used && c.pairs > 0, JSON.stringify(c));
    assert.ok(c.mu < done.report.mu, `centring removes the shared direction: ${c.mu} vs ${done.report.mu}`);
    assertClean(b);
  } finally { await b.close(); }
});
