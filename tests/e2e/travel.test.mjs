// Results that travel: the permalink opened in a fresh browser with no file and no other
// origin, corrupt and foreign fragments, the embed card in a 640×420 iframe on another origin with
// its postMessage protocol, and the exports with their file names.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { assertClean, serve, launch, finalReport, openApp, analyseFiles, cliReport, writeSafetensors, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => { server = await serve(join(ROOT, "dist")); });
after(() => server?.close());

test("a permalink reopens the full result in a fresh browser: same ε, no file, no other origin", async () => {
  const file = writeSafetensors(join(OUT, "travel-a.safetensors"), [{ name: "model.embed_tokens.weight", rows: 2000, dim: 80, shift: 0.03 }], 21);
  const b = await openApp(server);
  let href, report;
  try {
    const r = await analyseFiles(b.page, file);
    assert.equal(r.status, "done", r.text);
    report = r.report;
    href = await b.page.getAttribute('[data-testid="permalink"]', "href");
    assertClean(b);
  } finally { await b.close(); }
  assert.ok(href.includes("#r="), href);
  assert.ok(href.length < 2048, `permalink is ${href.length} characters`);
  console.log(`permalink length: ${href.length} characters`);
  const c = await launch(server.url);
  try {
    const requests = [];
    c.page.on("request", (q) => requests.push(q.url()));
    await c.page.goto(href);
    const r = await finalReport(c.page, 20_000);
    assert.equal(r.status, "done", r.text);
    for (const k of ["mu", "sigma", "epsilon", "epsilon_3sigma", "rows", "dim", "pairs", "seed"]) {
      assert.equal(r.report[k], report[k], k);
    }
    assert.equal(r.report.tensor, report.tensor);
    assert.match(await c.page.textContent('[data-testid="report"]'), /Shared result, opened from a link/);
    // The histogram redraws from the link alone.
    const ink = await c.page.$eval('[data-testid="histogram-zoom"]', (cv) => {
      const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 600) n++;
      return n;
    });
    assert.ok(ink > 1000, "the histogram draws");
    const origin = new URL(server.url).origin;
    assert.deepEqual(requests.filter((u) => !u.startsWith(origin) && !u.startsWith("data:") && !u.startsWith("blob:")), []);
    assert.ok(!requests.some((u) => u.includes("worker")), "no worker is started for a stored result");
    assertClean(c);
  } finally { await c.close(); }
});

test("a corrupt or foreign fragment gets a clear message, never a crash", async () => {
  const b = await launch(server.url);
  try {
    for (const [fragment, pattern] of [["#r=1.AAAAbroken", /does not open a result/], ["#section-2", /not an Orthoscope result|does not open a result/]]) {
      await b.page.goto(server.url + "?x=" + Math.random() + fragment);
      const r = await finalReport(b.page, 20_000);
      assert.equal(r.status, "error", fragment);
      assert.match(r.text, pattern, fragment);
      // The page stays usable: a demo still runs.
      await b.page.click('[data-testid="demo-run"]');
      const again = await finalReport(b.page, 120_000, r.run);
      assert.equal(again.status, "done", again.text);
    }
    assertClean(b);
  } finally { await b.close(); }
});

test("the embed card fits a 640×420 iframe on another origin, links back, and answers the postMessage protocol", async () => {
  const hostDir = join(OUT, "host");
  mkdirSync(hostDir, { recursive: true });
  const file = writeSafetensors(join(hostDir, "posted.safetensors"), [{ name: "model.embed_tokens.weight", rows: 1200, dim: 48 }], 31);
  const want = cliReport(file);
  writeFileSync(join(hostDir, "index.html"), `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>host</title></head><body>
<iframe id="card" width="640" height="420" style="border:0" src="${server.url}?embed=1&demo=class1-like"></iframe>
<script>
window.msgs = [];
window.addEventListener("message", (e) => { if (e.data && e.data.orthoscope) window.msgs.push(e.data); });
window.ping = () => document.getElementById("card").contentWindow.postMessage({ orthoscope: "PING" }, "*");
window.send = async () => {
  const buffer = await (await fetch("posted.safetensors")).arrayBuffer();
  document.getElementById("card").contentWindow.postMessage({ orthoscope: { buffer, name: "posted.safetensors" } }, "*");
};
</script></body></html>`);
  const host = await serve(hostDir);
  const b = await launch(host.url);
  try {
    await b.page.goto(host.url);
    const frame = await (await b.page.waitForSelector("#card")).contentFrame();
    const r = await finalReport(frame, 120_000);
    assert.equal(r.status, "done", r.text);
    const size = await frame.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]);
    assert.ok(size[0] <= 640 && size[1] <= 420, `the card is ${size[0]}×${size[1]}`);
    const card = await frame.$eval('[data-testid="report"]', (el) => { const r = el.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; });
    assert.ok(card[1] <= 420, `card height ${card[1]}`);
    console.log(`embed card: ${card[0]}×${card[1]} px inside the 640×420 frame`);
    const link = await frame.$('[data-testid="embed-link"]');
    assert.equal(await link.getAttribute("target"), "_blank");
    const back = await link.getAttribute("href");
    assert.ok(!back.includes("embed=1") && back.includes("#r="), back);
    await b.page.screenshot({ path: join(OUT, "embed-in-host.png") });
    // The protocol: PING → PONG, a posted buffer → progress and the Report.
    await b.page.evaluate(() => window.ping());
    await b.page.waitForFunction(() => window.msgs.some((m) => m.orthoscope === "PONG"));
    await b.page.evaluate(() => window.send());
    await b.page.waitForFunction(() => window.msgs.some((m) => m.orthoscope.type === "report"), null, { timeout: 60_000 });
    const msgs = await b.page.evaluate(() => window.msgs);
    const report = msgs.find((m) => m.orthoscope.type === "report").orthoscope.report;
    assert.equal(report.file, "posted.safetensors");
    assert.equal(report.rows, 1200);
    assert.ok(Math.abs(report.epsilon - want.epsilon) < 1e-6, `${report.epsilon} vs CLI ${want.epsilon}`);
    assert.deepEqual(b.errors, []);
  } finally { await b.close(); host.close(); }
});

test("exports: JSON, CSV, PNG and SVG carry the model's file name and tensor; the embed code is an iframe", async () => {
  const file = writeSafetensors(join(OUT, "Export-Model.safetensors"), [{ name: "model.embed_tokens.weight", rows: 1000, dim: 32 }], 41);
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, file);
    assert.equal(r.status, "done", r.text);
    const stem = "orthoscope-Export-Model-model.embed_tokens.weight";
    const download = async (click) => {
      const [d] = await Promise.all([b.page.waitForEvent("download"), click()]);
      return { name: d.suggestedFilename(), text: readFileSync(await d.path(), "utf8") };
    };
    const json = await download(() => b.page.click("text=Report (JSON)"));
    assert.equal(json.name, `${stem}.json`);
    assert.equal(JSON.parse(json.text).epsilon, r.report.epsilon);
    const csv = await download(() => b.page.click("text=Histogram (CSV)"));
    assert.equal(csv.name, `${stem}-histogram.csv`);
    assert.equal(csv.text.trim().split("\n").length, 1 + 600, "a header and 300 + 300 bins");
    const chart = b.page.locator("figure.chart").filter({ has: b.page.locator('[data-testid="histogram"]') });
    const png = await download(() => chart.getByRole("button", { name: "PNG" }).click());
    assert.equal(png.name, `${stem}-histogram.png`);
    const svg = await download(() => chart.getByRole("button", { name: "SVG" }).click());
    assert.equal(svg.name, `${stem}-histogram.svg`);
    assert.match(svg.text, /<svg[^>]*>/);
    // The Table-1 map exports too (its colours written into the file).
    const map = await download(() => b.page.click("text=Map as SVG"));
    assert.equal(map.name, "orthoscope-table1-map.svg");
    assert.match(map.text, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*><style>/);
    assert.equal((map.text.match(/<circle /g) ?? []).length, 45, "the paper's 45 models");
    const mapPng = await download(() => b.page.click("text=Map as PNG"));
    assert.equal(mapPng.name, "orthoscope-table1-map.png");
    assert.equal(mapPng.text.slice(1, 4), "PNG", "a PNG file");
    assert.equal(png.text.slice(1, 4), "PNG", "a PNG file");
    const snippet = await b.page.inputValue('[data-testid="embed-code"]');
    assert.match(snippet, /^<iframe src="http:\/\/127\.0\.0\.1:\d+\/\?embed=1#r=1\.[A-Za-z0-9_-]+" width="640" height="420"/);
    assertClean(b);
  } finally { await b.close(); }
});
