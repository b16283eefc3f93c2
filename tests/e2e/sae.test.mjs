// End to end: a sparse autoencoder's dictionary (docs/method.md §10). A SAELens folder
// (sae_weights.safetensors, cfg.json, sparsity.safetensors) dropped in the page is read as the
// dictionary's decoder: the CLI's ε on the same files, the card's dictionary block with the share
// of its ε's capacity it uses, its dead latents, its own marker on the Table-1 map, and, beside an
// embedding of the same width, both ε side by side in the comparison. Screenshots at 375 and
// 1280 px, light and dark; axe-core on the card.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readFileSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { serve, openApp, analyseFiles, cliReport, assertClean, writeSafetensors, finalReport, currentRun, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

const AXE = readFileSync(join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");

/** axe-core's violations on the page as it stands (WCAG 2.x A and AA rules). */
async function axeViolations(page) {
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    return r.violations.map((v) => `${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ")}`);
  });
}

const DEAD = 16;

/** The page area from the card's top to the end of its dead-latents section, in page coordinates. */
function cardTop(page) {
  return page.evaluate(() => {
    const card = document.querySelector("article.card").getBoundingClientRect();
    const end = document.querySelector('[data-testid="trained"]').getBoundingClientRect();
    return { x: card.left + scrollX, y: card.top + scrollY, width: card.width, height: end.bottom - card.top };
  });
}

/** A SAELens folder written by the fixture CLI: W_enc, W_dec [dSae, dIn] with rows far from unit
 *  norm, a cfg.json (layer 6, blocks.6.hook_resid_pre) and sparsity.safetensors whose first DEAD
 *  latents never fired. Returns its three files. */
function saelensFolder(dIn, dSae) {
  const dir = join(OUT, `sae-saelens-${dSae}x${dIn}`);
  rmSync(dir, { recursive: true, force: true });
  execFileSync(join(ROOT, "target/release/orthoscope-fixtures"), [
    "generate-sae", dir, "--layout", "saelens", "--d-in", String(dIn), "--d-sae", String(dSae), "--dead", String(DEAD),
  ]);
  return ["cfg.json", "sae_weights.safetensors", "sparsity.safetensors"].map((f) => join(dir, f));
}

test("a SAELens folder dropped in the page: its features' ε equals the CLI's, the card says what they are and the capacity they use, the map has their marker", async () => {
  // At d_in = 768 these features are Class 2 (ε ≈ 0.083), where Eq. 7's capacity is the headline's.
  const [D_IN, D_SAE] = [768, 2048];
  const files = saelensFolder(D_IN, D_SAE);
  const want = cliReport(...files);
  assert.equal(want.tensor_role, "sae_decoder");
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, files);
    assert.equal(r.status, "done", r.text);
    const got = r.report;
    assert.equal(got.tensor_role, "sae_decoder");
    assert.equal(got.tensor, "W_dec", "the decoder, never the encoder");
    assert.equal(got.exact, true);
    assert.ok(Math.abs(got.epsilon - want.epsilon) <= 1e-6, `ε: page ${got.epsilon} CLI ${want.epsilon}`);
    const d = got.dictionary;
    assert.equal(d.d_sae, D_SAE);
    assert.equal(d.d_in, D_IN);
    assert.equal(d.layer, 6);
    assert.equal(d.source_layout, "saelens");
    assert.ok(Math.abs(d.log10_capacity_used - want.dictionary.log10_capacity_used) <= 1e-6);

    // The headline names the features, not the paper's embedding ε.
    assert.match(await b.page.textContent('[data-testid="epsilon-label"]'), /features \(decoder directions\)/);
    assert.match(await b.page.textContent('[data-testid="not-embedding"]'), /not the paper's embedding ε/);
    // The dictionary block and the capacity it uses.
    const block = await b.page.textContent('[data-testid="dictionary"]');
    for (const fact of ["2,048", "blocks.6.hook_resid_pre", "standard", "saelens"]) assert.ok(block.includes(fact), `${fact} in: ${block}`);
    const used = b.page.locator('[data-testid="capacity-used"]');
    assert.ok(Math.abs(Number(await used.getAttribute("data-log10-capacity-used")) - d.log10_capacity_used) <= 1e-9);
    const exponent = d.log10_capacity_used.toFixed(2).replace("-", "−");
    const usedText = await used.textContent();
    assert.ok(usedText.startsWith(`This dictionary uses 10${exponent} of the capacity its own ε allows: 2,048 features`), usedText);
    assert.ok(!usedText.includes("indeterminate"), usedText);
    // Dead latents, named so, and ε without them as the CLI computes it.
    assert.equal(await b.page.textContent("#trained-heading"), "Dead latents");
    assert.match(await b.page.textContent('[data-testid="trained"] .rules'), new RegExp(`${DEAD} dead latents`));
    const without = Number(await b.page.getAttribute('[data-testid="trained-epsilon"]', "data-value"));
    assert.ok(Math.abs(without - want.trained.epsilon) <= 1e-6, `ε without dead latents: page ${without} CLI ${want.trained.epsilon}`);

    // The map: one point of the dictionary kind (a triangle), keyed in the legend; the demo keeps
    // its diamond.
    const marks = await b.page.$$eval('[data-testid="table1-map"] .pt.user', (ps) => ps.map((p) => [p.getAttribute("class"), p.getAttribute("aria-label")]));
    const features = marks.filter(([c]) => c.includes("features"));
    assert.equal(features.length, 1, JSON.stringify(marks));
    assert.match(features[0][1], /SAE dictionary's features/);
    assert.equal(marks.length - features.length, 1, "the demo is an embedding's marker");
    assert.match(await b.page.textContent('.map-legend [data-marker="features"]'), /SAE dictionary's features/);
    // The comparison names the role.
    const roles = await b.page.$$eval('[data-testid="compare-role"]', (cs) => cs.map((c) => c.textContent));
    assert.deepEqual(roles, ["embedding", "features of layer 6"]);

    // Screenshots, and nothing wider than a phone.
    for (const scheme of ["light", "dark"]) {
      await b.page.emulateMedia({ colorScheme: scheme });
      await b.page.setViewportSize({ width: 1280, height: 900 });
      assert.deepEqual(await axeViolations(b.page), [], `page with a dictionary, ${scheme}`);
      await b.page.locator("article.card").screenshot({ path: join(OUT, `sae-card-1280-${scheme}.png`) });
      // The card's top (heading, figures, the dictionary, dead latents) at a size one can read.
      await b.page.screenshot({ path: join(OUT, `sae-card-top-1280-${scheme}.png`), fullPage: true, clip: await cardTop(b.page) });
      await b.page.locator("section.table1").screenshot({ path: join(OUT, `sae-map-1280-${scheme}.png`) });
      await b.page.setViewportSize({ width: 375, height: 740 });
      await b.page.waitForFunction(() => innerWidth === 375);
      const overflow = await b.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `no sideways scrolling at 375 px (${overflow} px, ${scheme})`);
      await b.page.screenshot({ path: join(OUT, `sae-375-${scheme}.png`), fullPage: true });
      await b.page.screenshot({ path: join(OUT, `sae-card-top-375-${scheme}.png`), fullPage: true, clip: await cardTop(b.page) });
      await b.page.locator("section.table1").screenshot({ path: join(OUT, `sae-map-375-${scheme}.png`) });
    }
    assertClean(b);
  } finally { await b.close(); }
});

test("an embedding and a dictionary of the same width: the comparison sets their ε side by side", async () => {
  // At d_in = 64 the features' ε is past 0.1: the share is still given, said to extrapolate.
  const D_IN = 64;
  const files = saelensFolder(D_IN, 1024);
  const embedding = writeSafetensors(join(OUT, "sae-embedding-1500x64.safetensors"), [{ name: "model.embed_tokens.weight", rows: 1500, dim: D_IN, shift: 0.05 }], 21);
  const b = await openApp(server);
  try {
    // The opening demo has another width: no pair, and no table, until a dictionary is there.
    assert.equal(await b.page.locator('[data-testid="features-vs-embedding"]').count(), 0);
    const e = await analyseFiles(b.page, embedding);
    assert.equal(e.status, "done", e.text);
    assert.equal(await b.page.locator('[data-testid="features-vs-embedding"]').count(), 0);
    const f = await analyseFiles(b.page, files);
    assert.equal(f.status, "done", f.text);
    const rows = await b.page.$$eval('[data-testid="features-vs-embedding-row"]', (rs) => rs.map((r) => ({
      features: Number(r.getAttribute("data-features-epsilon")),
      embedding: Number(r.getAttribute("data-embedding-epsilon")),
      text: r.textContent,
    })));
    assert.equal(rows.length, 1);
    assert.equal(rows[0].features, f.report.epsilon);
    assert.equal(rows[0].embedding, e.report.epsilon);
    assert.match(rows[0].text, /features of layer 6/);
    assert.equal(f.report.capacity_determinate, false);
    assert.match(await b.page.textContent('[data-testid="capacity-used"]'), /^This dictionary uses 10.*indeterminate.*rough guide\.$/);
    await b.page.setViewportSize({ width: 1280, height: 900 });
    await b.page.locator("section.compare").screenshot({ path: join(OUT, "sae-compare-1280.png") });
    assertClean(b);
  } finally { await b.close(); }
});

test("the dead-latent threshold: ?dead_below=-2.5 and the card's control set aside the latents the CLI's --dead-below does, with the same ε without them", async () => {
  const [D_IN, D_SAE, BELOW] = [128, 1024, -2.5];
  const files = saelensFolder(D_IN, D_SAE);
  const want = cliReport(...files, "--dead-below", String(BELOW));
  const deadRows = (report) => report.trained.rules.filter((r) => r.rule === "dead_latent");
  // The fixture's densities: the first DEAD never fired, the rest cycle −3, −2.75, −2.5, …: two in
  // seven of them are below −2.5 (strictly), besides the DEAD.
  let below = DEAD;
  for (let i = DEAD; i < D_SAE; i++) if (i % 7 < 2) below++;
  assert.deepEqual(deadRows(want).map((r) => r.rows), [below], "the CLI honours --dead-below");
  const same = async (page, r, how) => {
    assert.equal(r.status, "done", r.text);
    assert.deepEqual(deadRows(r.report), deadRows(want), `${how}: the dead latents`);
    assert.ok(Math.abs(r.report.trained.epsilon - want.trained.epsilon) <= 1e-6, `${how}: ε without them, page ${r.report.trained.epsilon} CLI ${want.trained.epsilon}`);
    assert.equal(Number(await page.getAttribute('[data-testid="dead-below-in-use"]', "data-value")), BELOW, `${how}: the threshold in use is shown`);
    assert.match(await page.textContent('[data-testid="trained"] .rules'), new RegExp(`${below} dead latents`));
  };

  // The URL parameter.
  let b = await openApp(server, `?dead_below=${BELOW}`);
  try {
    await same(b.page, await analyseFiles(b.page, files), "?dead_below");
    assertClean(b);
  } finally { await b.close(); }

  // The card's control, from the default (never fired) to −2.5, by keyboard: a value it refuses
  // starts nothing, Enter in the field applies, and the focus stays in the form.
  b = await openApp(server);
  try {
    const first = await analyseFiles(b.page, files);
    assert.equal(first.status, "done", first.text);
    assert.deepEqual(deadRows(first.report).map((r) => r.rows), [DEAD]);
    const field = b.page.getByLabel("Dead below log10 density");
    assert.equal(await field.getAttribute("data-testid"), "dead-below");
    assert.equal(Number(await field.inputValue()), -9.5);
    await field.fill("3");
    await field.press("Enter");
    await b.page.waitForFunction(() => /outside −12 … 0/.test(document.querySelector('[data-testid="dead-below-error"]')?.textContent ?? ""));
    assert.equal(await currentRun(b.page), first.run, "a refused threshold starts nothing");
    await field.fill(String(BELOW));
    await field.press("Enter");
    const again = await finalReport(b.page, 600_000, first.run);
    await same(b.page, again, "the control");
    // The keyboard user keeps their place: the focus stays in the threshold's form (the field, or
    // Apply where the new card replaced the one that held it), never lost to the page's body.
    await b.page.waitForFunction(() => ["dead-below", "dead-below-apply"].includes(document.activeElement?.id));
    // The comparison's row of these files takes the new numbers (no second row).
    const cells = await b.page.$$eval('[data-testid="compare-row"]', (rs) => rs.map((r) => Number(r.getAttribute("data-trained-epsilon"))));
    assert.ok(cells.includes(again.report.trained.epsilon), JSON.stringify(cells));
    assert.ok(!cells.includes(first.report.trained.epsilon), JSON.stringify(cells));
    assertClean(b);
  } finally { await b.close(); }

  // A value outside the range in the link is refused with the reason, and nothing is analysed.
  b = await openApp(server, "?dead_below=3");
  try {
    const r = await finalReport(b.page);
    assert.equal(r.status, "error");
    assert.match(await b.page.textContent('[data-testid="error"]'), /dead_below.*outside −12 … 0/);
  } finally { await b.close(); }
});
