// Why ε is what it is (issue 10 items 2–5): the geometry side by side in the compare view, the tail
// explorer with token strings, centred statistics, and the unembedding views.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertClean, serve, launch, finalReport, openApp, analyseFiles, writeSafetensors, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
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
