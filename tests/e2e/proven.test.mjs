// End to end: what the capacity numbers are (docs/method.md §2). The card of the built-in d = 64
// Kerdock demo (an optimal packing) and of a Class-2-like file shows the proven interval and floor
// with the numbers of the CLI's JSON for the same file, names the headline as the paper's fitted
// law, the permalink restores the interval, axe-core finds nothing, and at 375 px nothing overflows.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { serve, launch, openApp, analyseFiles, cliReport, assertClean, finalReport, fixture, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

const AXE = readFileSync(join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");

async function axeViolations(page) {
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    return r.violations.map((v) => `${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ")}`);
  });
}

/** The interval of one Report against another's: names exactly, numbers to 1e-6 (the page's f32
 *  kernels and the CLI's may differ in ε's last digits). */
function sameProven(got, want, what) {
  assert.ok(got && want, `${what}: capacity_proven present`);
  for (const k of ["floor_by", "at_least_by", "at_most_by"]) assert.equal(got[k], want[k], `${what}: ${k}`);
  for (const k of ["floor_max_cos", "log10_at_least", "log10_at_most"]) {
    assert.ok(Math.abs(got[k] - want[k]) <= 1e-6 * Math.max(1, Math.abs(want[k])), `${what}: ${k} ${got[k]} vs ${want[k]}`);
  }
}

/** "8.39 × 10⁶" as the card prints a log10 count ("2,112": grouped digits below 10⁴). */
function scientific(log10) {
  if (log10 < 4) return Math.round(10 ** log10).toLocaleString("en-US");
  let e = Math.floor(log10), m = 10 ** (log10 - e);
  if (Math.round(m * 100) >= 1000) { m /= 10; e += 1; }
  const sup = String(e).replace(/\d/g, (c) => "⁰¹²³⁴⁵⁶⁷⁸⁹"[c]);
  return `${m.toFixed(2)} × 10${sup}`;
}

test("the Kerdock demo's card: the optimal packing meets its floor, and the numbers are the CLI's", async () => {
  const file = fixture("kerdock-64.safetensors", "--construction", "kerdock", "--dim", "64");
  const want = cliReport(file);
  assert.equal(want.rows, 2112);
  // Every |cos| of the set is 0 or 1/8: the orthoplex floor for 2112 lines in R^64 is met.
  assert.ok(Math.abs(want.capacity_proven.floor_max_cos - 0.125) < 1e-9, JSON.stringify(want.capacity_proven));
  assert.equal(want.capacity_proven.at_least_by, "kerdock");
  const b = await openApp(server, "?demo=kerdock-64");
  try {
    const r = await finalReport(b.page);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.rows, 2112);
    assert.ok(Math.abs(r.report.epsilon - want.epsilon) <= 1e-6, `ε ${r.report.epsilon} vs ${want.epsilon}`);
    sameProven(r.report.capacity_proven, want.capacity_proven, "kerdock demo");
    const floor = await b.page.textContent('[data-testid="proven-floor"]');
    assert.match(floor, /No 2,112 unit vectors in R\^64 can have max \|cos\| below 0\.1250 \(orthoplex bound\)/);
    const interval = await b.page.textContent('[data-testid="proven-interval"]');
    assert.ok(interval.includes(scientific(want.capacity_proven.log10_at_least)), interval);
    assert.ok(interval.includes(scientific(want.capacity_proven.log10_at_most)), interval);
    assert.match(interval, /Kerdock construction/);
    assertClean(b);
  } finally { await b.close(); }
});

test("a Class-2-like file: the interval, the floor and the law's place on the card, restored by the permalink, accessible, fits 375 px", async () => {
  const file = fixture("proven-trained-like.safetensors", "--kind", "trained-like", "--rows", "6000", "--dim", "1024", "--seed", "5");
  const want = cliReport(file);
  assert.equal(want.class, "2", `a Class 2 fixture (ε ${want.epsilon})`);
  const b = await openApp(server);
  let href;
  try {
    const r = await analyseFiles(b.page, [file]);
    assert.equal(r.status, "done", r.text);
    sameProven(r.report.capacity_proven, want.capacity_proven, "page");
    const p = want.capacity_proven;
    const interval = await b.page.textContent('[data-testid="proven-interval"]');
    assert.ok(interval.includes(scientific(p.log10_at_least)) && interval.includes(scientific(p.log10_at_most)), interval);
    assert.match(await b.page.textContent('[data-testid="proven-floor"]'), /No 6,000 unit vectors in R\^1,024/);
    // The headline is named for what it is, and where it stands against the proven range is said.
    const law = want.log10_capacity.adjusted_full;
    const verdict = await b.page.textContent('[data-testid="proven-verdict"]');
    if (law > p.log10_at_most) assert.match(verdict, /exceeds the most directions/);
    else if (law < p.log10_at_least) assert.match(verdict, /falls below what provably exists/);
    else assert.match(verdict, /inside the proven range/);
    assert.match(await b.page.textContent(".headline"), /the paper's law \(fitted to gradient-descent packings, §3\.3\)/);
    assert.deepEqual(await axeViolations(b.page), [], "axe-core on the card");
    href = await b.page.getAttribute('[data-testid="permalink"]', "href");
    // A phone: the proven lines wrap, nothing scrolls sideways.
    await b.page.setViewportSize({ width: 375, height: 800 });
    await b.page.waitForTimeout(300);
    const wide = await b.page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 375, `page is ${wide} px wide at 375`);
    const box = await b.page.locator('[data-testid="capacity-proven"]').boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 375, JSON.stringify(box));
    assertClean(b);
  } finally { await b.close(); }
  const c = await launch(server.url);
  try {
    await c.page.goto(href);
    const r = await finalReport(c.page, 20_000);
    assert.equal(r.status, "done", r.text);
    sameProven(r.report.capacity_proven, want.capacity_proven, "permalink");
    assert.match(await c.page.textContent('[data-testid="proven-floor"]'), /No 6,000 unit vectors/);
    assertClean(c);
  } finally { await c.close(); }
});
