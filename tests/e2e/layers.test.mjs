// End to end: a folder of a model's dictionaries, layer by layer (docs/method.md §10). A folder
// of three sparsify `layers.N/` dictionaries chosen through the folder picker is analysed one
// dictionary after another, each exactly and each its own row of the session; the layer chart
// then has three points, in layer order, whose ε are the CLI's `analyze --each` ε over the same
// folders, and the embedding analysed before them (same width) is its dashed reference.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { serve, openApp, analyseFiles, currentRun, finalReport, writeSafetensors, assertClean, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => {
  mkdirSync(OUT, { recursive: true });
  server = await serve(join(ROOT, "dist"));
});
after(() => server?.close());

const FIXTURES = join(ROOT, "target/release/orthoscope-fixtures");
const CLI = join(ROOT, "target/release/orthoscope");
const AXE = readFileSync(join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");

/** axe-core's violations (WCAG 2.x A and AA) inside `selector`. */
async function axeViolations(page, selector) {
  await page.evaluate(AXE);
  return page.evaluate(async (selector) => {
    const r = await window.axe.run(document.querySelector(selector), { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    return r.violations.map((v) => `${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ")}`);
  }, selector);
}

const run = (bin, ...args) => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: see scripts/test.sh for how it is built`);
  return execFileSync(bin, args, { encoding: "utf8", maxBuffer: 64 << 20 });
};

// Both passes are exact over the same decoded rows; the page's simd128 tiles and the CLI's AVX2
// ones add in different orders, so they agree to rounding (the issue asks 1e-6).
const close = (a, b, what) => assert.ok(Math.abs(a - b) <= 1e-6, `${what}: page ${a} CLI ${b}`);

/** Three sparsify dictionaries `layers.0..2` (by default d_in 64, 512 latents), and beside them what a
 *  trainer leaves at the top of its run folder (its config), which is no dictionary's. */
function layersFolder(name = "sparsify-run", dIn = 64, dSae = 512) {
  const dir = join(OUT, name);
  rmSync(dir, { recursive: true, force: true });
  run(FIXTURES, "generate-sae", dir, "--layout", "sparsify", "--layers", "3", "--d-in", String(dIn), "--d-sae", String(dSae));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ batch_size: 8, layers: [0, 1, 2] }));
  return dir;
}

test("a folder of three layers' dictionaries: three exact reports, and the chart's points are the CLI's in layer order", async () => {
  const dir = layersFolder();
  const folders = [0, 1, 2].map((l) => join(dir, `layers.${l}`));
  const want = JSON.parse(run(CLI, "analyze", "--each", "--json", ...folders));
  assert.equal(want.length, 3);
  const b = await openApp(server);
  try {
    // The model's embedding, of the dictionaries' width, first: the chart's reference line.
    const embedding = writeSafetensors(join(OUT, "embedding-d64.safetensors"), [
      { name: "model.embed_tokens.weight", rows: 700, dim: 64, shift: 0.02 },
    ]);
    const e = await analyseFiles(b.page, embedding);
    assert.equal(e.status, "done", e.text);

    const before = await currentRun(b.page);
    await b.page.setInputFiles('[data-testid="folder-input"]', dir);
    // While the queue runs the progress names the dictionary and where it stands.
    await b.page.waitForSelector('[data-testid="layers-queue"][data-total="3"]', { timeout: 60_000 });
    await b.page.waitForSelector('[data-testid="layers-queue"][data-state="done"]', { timeout: 600_000 });
    const queue = await b.page.$eval('[data-testid="layers-queue"]', (el) => el.dataset);
    assert.equal(queue.done, "3");
    const last = await finalReport(b.page, 60_000, before);
    assert.equal(last.status, "done", last.text);
    assert.ok(last.run >= before + 3, `three runs after ${before}, last ${last.run}`);
    // The last one on display is layer 2's dictionary, exact, from its own folder's files.
    assert.equal(last.report.tensor_role, "sae_decoder");
    assert.equal(last.report.exact, true);
    assert.equal(last.report.dictionary.layer, 2);
    assert.equal(last.report.dictionary.hook, "layers.2");
    close(last.report.epsilon, want[2].epsilon, "layer 2 on display");

    // Each dictionary is a row of the session (and the embedding another).
    const rows = await b.page.$$eval('[data-testid="compare-row"]', (els) => els.map((e) => Number(e.dataset.epsilon)));
    for (const [l, w] of want.entries()) {
      assert.ok(rows.some((r) => Math.abs(r - w.epsilon) <= 1e-6), `layer ${l}'s row (ε ${w.epsilon}) among ${rows}`);
    }

    const chart = b.page.locator('[data-testid="layer-chart"]');
    await chart.waitFor();
    const points = await b.page.$$eval('[data-testid="layer-point"]', (els) =>
      els.map((e) => ({ layer: Number(e.dataset.layer), epsilon: Number(e.dataset.epsilon) })));
    assert.deepEqual(points.map((p) => p.layer), [0, 1, 2]);
    for (const [l, p] of points.entries()) close(p.epsilon, want[l].epsilon, `layer ${l}'s point`);
    close(Number(await b.page.getAttribute('[data-testid="layer-reference"]', "data-epsilon")), e.report.epsilon, "reference");
    // Drawn, with a text alternative naming every layer, and exportable.
    const alt = await b.page.getAttribute('[data-testid="layer-chart-canvas"]', "aria-label");
    assert.match(alt, /layer 0 .*layer 1 .*layer 2 /, alt);
    assert.match(alt, /input embedding's ε/, alt);
    for (const name of ["PNG", "SVG", "CSV"]) {
      // By keyboard, as every control.
      await chart.getByRole("button", { name: new RegExp(name) }).focus();
      const [download] = await Promise.all([b.page.waitForEvent("download"), b.page.keyboard.press("Enter")]);
      assert.equal(download.suggestedFilename(), `orthoscope-layers.${name.toLowerCase()}`);
      if (name === "CSV") {
        const lines = readFileSync(await download.path(), "utf8").trim().split("\n");
        assert.equal(lines[0], "layer,label,epsilon,class");
        assert.deepEqual(lines.slice(1, 4).map((l) => l.split(",")[0]), ["0", "1", "2"]);
        for (const l of [0, 1, 2]) close(Number(lines[1 + l].split(",")[2]), want[l].epsilon, `CSV layer ${l}`);
        assert.match(lines[4], /embedding: model\.embed_tokens\.weight/);
      }
    }

    for (const width of [375, 1280]) {
      await b.page.setViewportSize({ width, height: 900 });
      await chart.scrollIntoViewIfNeeded();
      // The canvas redraws on resize; the chart fits the viewport.
      await b.page.waitForTimeout(300);
      const box = await chart.boundingBox();
      assert.ok(box.x >= 0 && box.x + box.width <= width + 0.5, `chart ${JSON.stringify(box)} at ${width} px`);
      const overflow = await b.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `no sideways scrolling at ${width} px (${overflow} px)`);
      assert.deepEqual(await axeViolations(b.page, '[data-testid="layer-chart"]'), [], `layer chart at ${width} px`);
      await chart.screenshot({ path: join(OUT, `layers-${width}.png`) });
    }
    assertClean(b);
  } finally { await b.close(); }
});

test("Cancel stops a folder's queue: the dictionaries not yet analysed are not", async () => {
  // Large enough (16384 latents at d_in 256, one worker) that the first is still running when
  // Cancel is pressed.
  const dir = layersFolder("sparsify-run-large", 256, 16384);
  const b = await openApp(server, "?workers=1");
  try {
    await b.page.setInputFiles('[data-testid="folder-input"]', dir);
    await b.page.waitForSelector('[data-testid="layers-queue"][data-state="running"]', { timeout: 60_000 });
    await b.page.click('[data-testid="cancel"]');
    await b.page.waitForSelector('[data-testid="layers-queue"][data-state="stopped"]', { timeout: 60_000 });
    const queue = await b.page.$eval('[data-testid="layers-queue"]', (el) => ({ ...el.dataset, text: el.textContent }));
    assert.ok(Number(queue.done) < 3, JSON.stringify(queue));
    assert.match(queue.text, /cancelled/);
    // Nothing starts after the cancel.
    await b.page.waitForTimeout(1500);
    assert.equal(await b.page.getAttribute('[data-testid="report"]', "data-status"), "cancelled");
    assert.deepEqual(b.errors, []);
  } finally { await b.close(); }
});
