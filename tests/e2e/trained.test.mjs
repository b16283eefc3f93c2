// The rows a model never trained: ε without them beside the paper's, the switches of the rules that
// found them, the tail explorer among trained rows, the histogram's overlay, the compare table and
// the permalink — on a generated BERT-like folder (weights + tokenizer.json with [unusedN] tokens and
// rows past the vocabulary), against the CLI over the same files.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { assertClean, serve, launch, finalReport, openApp, analyseFiles, cliReport, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => { mkdirSync(OUT, { recursive: true }); server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

const ROWS = 600, DIM = 32, VOCAB = 570;
const UNUSED = Array.from({ length: 30 }, (_, i) => 100 + i);

/** Trained rows are seeded noise around a small shared offset; the [unusedN] rows and the rows past
 *  the vocabulary are small vectors close to one direction of their own (what training leaves of
 *  rows it never reached), so they pair with each other at cosines near 1. `hidden` rows look the
 *  same but carry ordinary names: only the weights say they were never trained. */
function writeFolder(dir, hidden = []) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  let s = 0x2545F491 >>> 0;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32 - 0.5; };
  const shared = Array.from({ length: DIM }, () => next());
  const data = new Float32Array(ROWS * DIM);
  for (let r = 0; r < ROWS; r++) {
    const untrained = UNUSED.includes(r) || r >= VOCAB || hidden.includes(r);
    for (let c = 0; c < DIM; c++) data[r * DIM + c] = untrained ? 0.3 * shared[c] + 0.01 * next() : next() + 0.05;
  }
  const header = Buffer.from(JSON.stringify({ "bert.embeddings.word_embeddings.weight": { dtype: "F32", shape: [ROWS, DIM], data_offsets: [0, data.byteLength] } }));
  const json = Buffer.concat([header, Buffer.alloc((8 - (header.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const weights = join(dir, "model.safetensors");
  writeFileSync(weights, Buffer.concat([len, json, Buffer.from(data.buffer)]));
  const vocab = Object.fromEntries(Array.from({ length: VOCAB }, (_, i) => [UNUSED.includes(i) ? `[unused${i}]` : `w${i}`, i]));
  const tokenizer = join(dir, "tokenizer.json");
  writeFileSync(tokenizer, JSON.stringify({ added_tokens: [], model: { type: "WordPiece", vocab } }));
  return [weights, tokenizer];
}

const value = (page) => page.getAttribute('[data-testid="trained-epsilon"]', "data-value");
const close = (a, b, tol, what) => assert.ok(Math.abs(a - b) <= tol, `${what}: ${a} vs ${b}`);

test("ε without the rows never trained: shown beside the paper's, switched per rule, followed by the explorer, the overlay, the compare table and a shared link", async () => {
  const files = writeFolder(join(OUT, "trained-bert"));
  const want = cliReport(...files);
  assert.ok(want.trained, "the CLI sets the rows aside");
  let link;
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, files);
    assert.equal(r.status, "done", r.text);
    const t = r.report.trained;
    assert.deepEqual(t.excluded, [[100, 130], [570, 600]]);
    assert.deepEqual(t.rules.map((x) => [x.rule, x.rows]), [["past_vocabulary", 30], ["unused_token", 30]]);
    close(t.epsilon, want.trained.epsilon, 1e-6, "the page's ε without them is the CLI's");
    assert.ok(r.report.epsilon - t.epsilon > 0.01, `the untrained rows raise the paper's ε (${r.report.epsilon} vs ${t.epsilon})`);
    // The headline stays the paper's; the line beside it carries the other number, its class and why.
    close(Number(await value(b.page)), t.epsilon, 0, "trained-epsilon's data-value");
    const line = await b.page.textContent('[data-testid="trained"]');
    assert.match(line, /Without the 60 rows the model never trained: ε = /);
    assert.match(line, /30 rows past the tokenizer's last token/);
    assert.match(line, /30 tokens the tokenizer names unused or reserved/);

    // One rule off: the numbers of that choice, which the report carries as a variant.
    await b.page.uncheck('[data-testid="trained-rule-unused_token"]');
    const past = t.variants.find((v) => v.rules_enabled.length === 1 && v.rules_enabled[0] === "past_vocabulary");
    assert.ok(past, "a variant for the past-vocabulary rule alone");
    await b.page.waitForFunction((v) => document.querySelector('[data-testid="trained-epsilon"]').getAttribute("data-value") === String(v), past.epsilon);
    await b.page.uncheck('[data-testid="trained-rule-past_vocabulary"]');
    await b.page.waitForFunction(() => document.querySelector('[data-testid="trained-epsilon"]').getAttribute("data-value") === "");
    assert.match(await b.page.textContent('[data-testid="trained-epsilon"]'), /No rule is enabled/);
    assert.equal(await b.page.isVisible('[data-testid="pairs-show-all"]'), false, "nothing to switch with every row counted");
    await b.page.check('[data-testid="trained-rule-unused_token"]');
    await b.page.check('[data-testid="trained-rule-past_vocabulary"]');
    await b.page.waitForFunction((v) => document.querySelector('[data-testid="trained-epsilon"]').getAttribute("data-value") === String(v), t.epsilon);

    // The tail explorer: pairs among trained rows by default, every pair (marked) on request.
    const cells = () => b.page.$$eval('[data-testid="top-pairs"] tbody tr', (rs) => rs.map((x) => [x.children[1].textContent, x.children[2].textContent]));
    const shown = await cells();
    assert.equal(shown.length, t.top_pairs.length);
    assert.equal(await b.page.locator('[data-testid="top-pairs"] [data-testid="aside-mark"]').count(), 0);
    assert.ok(shown.every(([a, c]) => !a.includes("unused") && !c.includes("unused")), JSON.stringify(shown.slice(0, 3)));
    assert.match(await b.page.textContent('[data-testid="top-pairs"] caption'), /among the trained rows/);
    await b.page.check('[data-testid="pairs-show-all"]');
    await b.page.waitForFunction(() => document.querySelectorAll('[data-testid="top-pairs"] [data-testid="aside-mark"]').length > 0);
    const marks = await b.page.locator('[data-testid="top-pairs"] [data-testid="aside-mark"]').count();
    assert.equal(marks, 2 * r.report.top_pairs.length, "the paper's list is all untrained pairs here, each row marked");
    assert.equal(await b.page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "pairs-show-all", "the switch keeps focus as the table redraws");

    // A neighbour search from an unused token says its neighbours are untrained rows.
    await b.page.fill('[data-testid="explore-query"]', "[unused105]");
    await b.page.click('[data-testid="explore-find"]');
    await b.page.waitForSelector('[data-testid="neighbours"]');
    assert.match(await b.page.textContent('[data-testid="neighbours"] caption'), /10 are rows the model never trained/);

    // The histogram's overlay splits off the pairs with a set-aside row.
    const alt = () => b.page.getAttribute('[data-testid="histogram"]', "aria-label");
    assert.doesNotMatch(await alt(), /set-aside/);
    await b.page.check('[data-testid="histogram-overlay"]');
    await b.page.waitForFunction(() => /pairs with a set-aside row/.test(document.querySelector('[data-testid="histogram"]').getAttribute("aria-label")));

    // The compare table's row carries it.
    const rows = b.page.locator('[data-testid="compare-row"]');
    close(Number(await rows.last().getAttribute("data-trained-epsilon")), t.epsilon, 0, "compare row");
    assert.equal(await rows.first().getAttribute("data-trained-epsilon"), "", "the demo has no untrained rows");
    link = await b.page.getAttribute('[data-testid="permalink"]', "href");
    await b.page.locator('[data-testid="trained"]').screenshot({ path: join(OUT, "trained-line.png") });
    assertClean(b);
  } finally { await b.close(); }

  // A fresh browser on the shared link: the default choice's numbers, and no other choice invented.
  const c = await launch(server.url);
  try {
    await c.page.goto(new URL(link, server.url).href);
    const r = await finalReport(c.page);
    assert.equal(r.status, "done");
    close(Number(await value(c.page)), r.report.trained.epsilon, 0, "the link's trained ε");
    close(r.report.trained.epsilon, want.trained.epsilon, 1e-6, "the link's trained ε is the CLI's");
    await c.page.uncheck('[data-testid="trained-rule-unused_token"]');
    await c.page.waitForFunction(() => /not carried by a shared link/.test(document.querySelector('[data-testid="trained-epsilon"]').textContent));
    assertClean(c);
  } finally { await c.close(); }
});

test("rows suspected from the weights alone: counted, off by default, switched on by the user", async () => {
  const HIDDEN = [5, 300];
  const files = writeFolder(join(OUT, "trained-suspected"), HIDDEN);
  const want = cliReport(...files);
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, files);
    assert.equal(r.status, "done", r.text);
    const t = r.report.trained;
    assert.deepEqual(t.rules.map((x) => [x.rule, x.rows, x.enabled]), [["past_vocabulary", 30, true], ["unused_token", 30, true], ["suspected", 2, false]]);
    assert.deepEqual(t.excluded, [[100, 130], [570, 600]], "the suspected rows are not set aside by default");
    assert.equal(await b.page.isChecked('[data-testid="trained-rule-suspected"]'), false);
    assert.match(await b.page.textContent('[data-testid="trained"]'), /2 suspected from the weights alone/);
    const all = t.variants.find((v) => v.rules_enabled.length === 3);
    assert.deepEqual(all.excluded, [[5, 6], [100, 130], [300, 301], [570, 600]]);
    close(all.epsilon, want.trained.variants.find((v) => v.rules_enabled.length === 3).epsilon, 1e-6, "the page's ε without all three is the CLI's");
    await b.page.check('[data-testid="trained-rule-suspected"]');
    await b.page.waitForFunction((v) => document.querySelector('[data-testid="trained-epsilon"]').getAttribute("data-value") === String(v), all.epsilon);
    assertClean(b);
  } finally { await b.close(); }
});
