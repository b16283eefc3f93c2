// A result a researcher can read: the comparison across models, the Table-1 map and the
// overlays (counted marks and inked pixels), keyboard-only control of a long run, drops anywhere,
// explicit list choices, axe-core in light and dark, and screenshots at 1280 and 375 px.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { assertClean, serve, launch, finalReport, currentRun, openApp, analyseFiles, fixture, cliReport, writeSafetensors, OUT, ROOT } from "./harness.mjs";

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

/** Pixels of a canvas that differ from its corner (background) colour. */
async function inkedPixels(page, selector) {
  return page.$eval(selector, (c) => {
    const ctx = c.getContext("2d");
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    const bg = [data[0], data[1], data[2]];
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (Math.abs(data[i] - bg[0]) + Math.abs(data[i + 1] - bg[1]) + Math.abs(data[i + 2] - bg[2]) > 60) n++;
    }
    return n;
  });
}

/** Distinct saturated colours drawn on a canvas (one per overlaid series, roughly). */
async function saturatedColours(page, selector) {
  return page.$eval(selector, (c) => {
    const { data } = c.getContext("2d").getImageData(0, 0, c.width, c.height);
    const seen = new Map();
    for (let i = 0; i < data.length; i += 4) {
      const [r, g, b] = [data[i], data[i + 1], data[i + 2]];
      if (Math.max(r, g, b) - Math.min(r, g, b) < 90) continue; // greys: axes, text, background
      const key = `${r >> 5},${g >> 5},${b >> 5}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    return [...seen.values()].filter((n) => n > 40).length;
  });
}

function threeFiles() {
  return [
    writeSafetensors(join(OUT, "cmp-a.safetensors"), [{ name: "model.embed_tokens.weight", rows: 1500, dim: 64 }], 11),
    writeSafetensors(join(OUT, "cmp-b.safetensors"), [{ name: "model.embed_tokens.weight", rows: 1500, dim: 96, shift: 0.05 }], 12),
    writeSafetensors(join(OUT, "cmp-c.safetensors"), [{ name: "model.embed_tokens.weight", rows: 1500, dim: 128, shift: 0.2 }], 13),
  ];
}

test("three files analysed in turn give three comparison rows with their ε; rows reorder, remove, persist and clear", async () => {
  const b = await openApp(server);
  try {
    // The opening demo is the first row.
    assert.equal(await b.page.locator('[data-testid="compare-row"]').count(), 1);
    const eps = [];
    for (const f of threeFiles()) {
      const r = await analyseFiles(b.page, f);
      assert.equal(r.status, "done", r.text);
      eps.push(r.report.epsilon);
    }
    const rows = () => b.page.$$eval('[data-testid="compare-row"]', (rs) => rs.map((r) => Number(r.getAttribute("data-epsilon"))));
    let shown = await rows();
    assert.equal(shown.length, 4);
    assert.deepEqual(shown.slice(1), eps, "rows in order of analysis, each with its ε");
    // A re-run of the same file is not a new row.
    await analyseFiles(b.page, threeFiles()[0]);
    assert.equal((await rows()).length, 4);
    // Reorder: the last row moves up one place.
    await b.page.locator('[data-testid="compare-row"]').nth(3).getByRole("button", { name: /Move .* up/ }).click();
    shown = await rows();
    assert.deepEqual([shown[2], shown[3]], [eps[2], eps[1]]);
    // Results persist across a reload (browser storage), then Clear forgets them.
    await b.page.reload();
    await finalReport(b.page);
    assert.deepEqual((await rows()).length, 4);
    await b.page.locator('[data-testid="compare-row"]').first().getByRole("button", { name: /Remove/ }).click();
    assert.equal((await rows()).length, 3);
    await b.page.click('[data-testid="compare-clear"]');
    assert.equal((await rows()).length, 0);
    assertClean(b);
  } finally { await b.close(); }
});

test("the Table-1 map draws the paper's 45 models and the session's, and the overlays and sensitivity charts draw", async () => {
  const b = await openApp(server);
  try {
    for (const f of threeFiles().slice(0, 2)) await analyseFiles(b.page, f);
    const marks = await b.page.$$eval('[data-testid="table1-map"] .pt', (ps) => ps.map((p) => p.getAttribute("class")));
    assert.equal(marks.filter((c) => !c.includes("user")).length, 45, "every Table-1 model is a mark");
    assert.equal(marks.filter((c) => c.includes("user")).length, 3, "the demo and two files are on the map");
    // Hover and focus read a point out.
    await b.page.locator('[data-testid="table1-map"] .pt').first().focus();
    assert.match(await b.page.textContent('[data-testid="map-readout"]'), /d = [\d,]+, ε = 0\.\d+/);
    // The sortable table holds the same 45 rows plus the session's.
    await b.page.click("text=Table 1 as a table (sortable)");
    assert.equal(await b.page.locator('[data-testid="table1-table"] tbody tr').count(), 48);
    await b.page.click('[data-testid="table1-table"] button.sort >> text=d_model');
    const firstD = await b.page.$eval('[data-testid="table1-table"] tbody tr td', (td) => td.textContent);
    assert.equal(firstD, "64", "sorted by d, ascending: the 64-wide file first");
    // Overlaid histograms: three series in distinct colours, and ink on every chart.
    const overlay = '[data-testid="overlay"]';
    await b.page.waitForSelector(overlay);
    assert.ok((await inkedPixels(b.page, overlay)) > 2000, "the overlay draws");
    assert.ok((await saturatedColours(b.page, '[data-testid="overlay-zoom"]')) >= 3, "three series (and the reference) in distinct colours");
    for (const id of ["histogram", "histogram-zoom", "sensitivity-epsilon", "sensitivity-dim"]) {
      assert.ok((await inkedPixels(b.page, `[data-testid="${id}"]`)) > 2000, `${id} draws`);
      const alt = await b.page.getAttribute(`[data-testid="${id}"]`, "aria-label");
      assert.ok(alt && alt.length > 20, `${id} has a text alternative`);
    }
    // Canvases are sized for the device's pixels (sharp on HiDPI).
    const [w, cw] = await b.page.$eval('[data-testid="histogram"]', (c) => [c.width, c.clientWidth]);
    assert.ok(Math.abs(w - cw * (await b.page.evaluate(() => devicePixelRatio))) <= 1);
    assertClean(b);
  } finally { await b.close(); }
});

test("the page's Report carries the same geometry as the CLI's (spectrum of G/V, dimensions that carry μ)", async () => {
  const file = writeSafetensors(join(OUT, "geometry-1500x128.safetensors"), [{ name: "model.embed_tokens.weight", rows: 1500, dim: 128, shift: 0.1 }], 17);
  const want = cliReport(file).geometry;
  // The plain simd128 build: its f32 kernel is the CLI's portable one bit for bit, so 1e-9 holds (the
  // relaxed build's fused multiply-adds differ at the f32 kernel's tolerance).
  const b = await openApp(server, "?kernel=simd128");
  try {
    const r = await analyseFiles(b.page, file);
    assert.equal(r.status, "done", r.text);
    const g = r.report.geometry;
    assert.ok(g, "an exact pass at d = 128 carries its geometry with the result");
    assert.equal(g.timing, "with the result");
    assert.equal(g.eigenvalues.length, 128);
    for (let i = 0; i < 10; i++) assert.ok(Math.abs(g.eigenvalues[i] - want.eigenvalues[i]) <= 1e-9 * want.eigenvalues[0], `λ${i}`);
    for (const k of ["participation_ratio", "effective_rank", "mean_vector_norm"]) {
      assert.ok(Math.abs(g[k] - want[k]) <= 1e-9 * Math.abs(want[k]), `${k}: page ${g[k]} CLI ${want[k]}`);
    }
    assert.deepEqual(g.top_mean_dimensions.map((d) => d.dim), want.top_mean_dimensions.map((d) => d.dim));
    assert.match(await b.page.textContent('[data-testid="report"]'), /participation ratio/);
    // The spectrum draws one point per eigenvalue, and names its numbers.
    const points = await b.page.$eval('[data-testid="spectrum"] .spectrum-line', (l) => l.getAttribute("points").trim().split(/\s+/).length);
    assert.equal(points, 128);
    assert.match(await b.page.getAttribute('[data-testid="spectrum"]', "aria-label"), /half of the second moment lies in the top \d+ of 128 directions/);
    assertClean(b);
  } finally { await b.close(); }
});

test("keyboard only: Tab to “Stop here” during a long run, Enter stops it with an estimate, focus lands on the result", async () => {
  const big = fixture("random-32000x2048-bf16.safetensors", "--kind", "random-init", "--rows", "32000", "--dim", "2048");
  const b = await openApp(server);
  try {
    const before = await currentRun(b.page);
    await b.page.setInputFiles('[data-testid="file-input"]', big);
    await b.page.waitForSelector('[data-testid="running-epsilon"]:has-text("running ε")', { timeout: 60_000 });
    let onStop = false;
    for (let i = 0; i < 60 && !onStop; i++) {
      await b.page.keyboard.press("Tab");
      onStop = await b.page.evaluate(() => document.activeElement?.getAttribute("data-testid") === "stop-early");
    }
    assert.ok(onStop, "Stop here is reachable with Tab");
    // Progress updates do not take the focus away: two new progress messages rendered (the running
    // ε's row count moves on each), and the focus is still on Stop here after each.
    for (let i = 0; i < 2; i++) {
      const shown = await b.page.textContent('[data-testid="running-epsilon"]');
      await b.page.waitForFunction((shown) => {
        const now = document.querySelector('[data-testid="running-epsilon"]')?.textContent;
        return now && now !== shown && /running ε/.test(now);
      }, shown, { timeout: 60_000, polling: 50 });
      assert.equal(await b.page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "stop-early", `after progress update ${i + 1}`);
    }
    assert.match(await b.page.textContent('[data-testid="progress-timing"]'), /\d+ % · elapsed [\d.]+ s/);
    await b.page.keyboard.press("Enter");
    const r = await finalReport(b.page, 30_000, before);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.exact, false);
    assert.ok(r.report.epsilon_ci);
    assert.equal(await b.page.evaluate(() => document.activeElement?.id), "result-heading");
    assertClean(b);
  } finally { await b.close(); }
});

test("lists start a run on an explicit choice, not on arrow keys; a drop anywhere is analysed and the page stays", async () => {
  const b = await openApp(server);
  try {
    const run = await currentRun(b.page);
    await b.page.focus('[data-testid="demo-select"]');
    await b.page.keyboard.press("ArrowDown");
    assert.equal(await b.page.$eval('[data-testid="demo-select"]', (s) => s.value), "random-init", "ArrowDown moved the choice");
    await b.page.click('[data-testid="demo-run"]');
    // A run starts in the handler of the event that asks for it, so one started by ArrowDown would
    // have taken a run id before the button's: the button's result must carry the very next id.
    const r = await finalReport(b.page, 120_000, run);
    assert.equal(r.run, run + 1, "one run, the button's: ArrowDown alone started nothing");
    assert.equal(r.report.file, "demo-random-init.safetensors");
    // Drop a file on the page's footer, far from the drop zone.
    const bytes = [...readFileSync(threeFiles()[0])];
    const url = b.page.url();
    const before = await currentRun(b.page);
    await b.page.evaluate((bytes) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(bytes)], "dropped.safetensors"));
      const target = document.querySelector("footer");
      target.dispatchEvent(new DragEvent("dragover", { bubbles: true, cancelable: true, dataTransfer: dt }));
      target.dispatchEvent(new DragEvent("drop", { bubbles: true, cancelable: true, dataTransfer: dt }));
    }, bytes);
    const dropped = await finalReport(b.page, 60_000, before);
    assert.equal(dropped.status, "done", dropped.text);
    assert.equal(dropped.report.file, "dropped.safetensors");
    assert.equal(b.page.url(), url, "the browser did not navigate away");
    assertClean(b);
  } finally { await b.close(); }
});

test("axe-core finds no violations on the page and the embed card, light and dark; screenshots at 1280 and 375 px", async () => {
  const b = await launch(server.url);
  try {
    for (const scheme of ["light", "dark"]) {
      await b.page.emulateMedia({ colorScheme: scheme });
      await b.page.setViewportSize({ width: 1280, height: 800 });
      await b.page.goto(server.url);
      await finalReport(b.page);
      await b.page.click("text=What these numbers mean");
      assert.deepEqual(await axeViolations(b.page), [], `page, ${scheme}`);
      await b.page.screenshot({ path: join(OUT, `page-1280-${scheme}.png`) });
      await b.page.screenshot({ path: join(OUT, `page-1280-${scheme}-full.png`), fullPage: true });
      await b.page.setViewportSize({ width: 375, height: 740 });
      // The page has taken the new width once every chart has been redrawn for it: a drawn
      // canvas's bitmap matches its laid-out size (src/ui/chart.rs sizes it at each redraw).
      await b.page.waitForFunction(() => innerWidth === 375 && [...document.querySelectorAll("canvas")]
        .filter((c) => c.clientWidth > 0)
        .every((c) => c.width === Math.round(c.clientWidth * Math.max(devicePixelRatio, 1))), null, { timeout: 60_000, polling: 50 });
      const overflow = await b.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `no sideways scrolling at 375 px (${overflow} px)`);
      await b.page.screenshot({ path: join(OUT, `page-375-${scheme}.png`), fullPage: true });
      await b.page.setViewportSize({ width: 640, height: 420 });
      await b.page.goto(server.url + "?embed=1&demo=class1-like");
      await finalReport(b.page);
      assert.deepEqual(await axeViolations(b.page), [], `embed card, ${scheme}`);
      await b.page.screenshot({ path: join(OUT, `embed-${scheme}.png`) });
    }
    assertClean(b);
  } finally { await b.close(); }
});
