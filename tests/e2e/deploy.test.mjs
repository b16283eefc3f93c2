// The release build deployed under a sub-path of a static host, with the page's
// Content-Security-Policy in force. Two deployments are checked:
//   - SUBPATH_DIST, built by scripts/test.sh with
//       trunk build --release --public-url /sub/path/ --dist target/deploy/sub/path
//     and served at http://127.0.0.1:PORT/sub/path/;
//   - dist/ itself (the default relative public_url "./"), served at a sub-path it was not built for.
// A small static server here records every path the browser asks for, the worker's included, so
// "every request stays under the sub-path" is checked on the server's side.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { launch, finalReport, ROOT } from "./harness.mjs";

const SUBPATH_DIST = join(ROOT, "target/deploy/sub/path");
const DIST = join(ROOT, "dist");
const DEMO = "?demo=class1-like"; // the smallest demo (8192 × 512)

/** The policy index.html must carry (the list; see the comment in index.html). */
const REQUIRED_CSP = {
  "default-src": ["'self'"],
  "script-src": ["'self'", "'wasm-unsafe-eval'"],
  "style-src": ["'self'"],
  // plotters styles the span it measures labels with through setAttribute (see index.html).
  "style-src-attr": ["'unsafe-inline'"],
  "worker-src": ["'self'"],
  "frame-src": ["'self'"],
  "connect-src": ["'self'", "https:", "http://localhost:*", "http://127.0.0.1:*"],
  "img-src": ["'self'", "data:", "blob:"],
  "font-src": ["'self'"],
  "object-src": ["'none'"],
  "base-uri": ["'self'"],
  "form-action": ["'self'"],
};

const MIME = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css" };

/** Serves `dir` under the URL path `prefix` (e.g. "/sub/path/") on 127.0.0.1, like any static host
 *  would; everything else is a 404. Records every requested path. */
async function serveAt(prefix, dir) {
  const requests = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    requests.push(path);
    let file = null;
    if (path.startsWith(prefix)) {
      const rel = normalize(path.slice(prefix.length) || "index.html");
      if (!rel.startsWith("..")) file = join(dir, rel);
    }
    if (file === null || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": MIME[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}${prefix}`;
  return { url, requests, close: () => server.close() };
}

/** Every file of a built site, as paths relative to it. */
function files(dir, rel = "") {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(dir, join(rel, e.name)) : [join(rel, e.name)],
  );
}

function parseCsp(html) {
  const m = html.match(/<meta\s+http-equiv="Content-Security-Policy"\s+content="([^"]*)"/i);
  assert.ok(m, "index.html has a Content-Security-Policy meta tag");
  const policy = {};
  for (const directive of m[1].split(";").map((d) => d.trim()).filter(Boolean)) {
    const [name, ...values] = directive.split(/\s+/);
    policy[name] = values;
  }
  return policy;
}

/** The static checks on a built site: hashed names, the CSP, integrity attributes, no inline code. */
function checkBuild(dir, base) {
  // Comments may name tags; only the markup counts.
  const html = readFileSync(join(dir, "index.html"), "utf8").replace(/<!--[\s\S]*?-->/g, "");
  const names = files(dir).filter((f) => f !== "index.html");
  for (const f of names) {
    assert.match(f, /^[a-z_]+-[0-9a-f]{8,16}(_bg)?\.(js|wasm|css)$/, `${f} has no content hash in its name`);
  }
  for (const unhashed of ["worker.js", "worker_bg.wasm", "worker_loader.js"]) assert.ok(!names.includes(unhashed), unhashed);
  // The hook's own names are SHA-256 prefixes of the bytes (Trunk's are seahash; not recomputed here).
  const mine = names.filter((f) => /^(worker|worker_relaxed)(_bg|_loader)?-|^start-/.test(f));
  assert.equal(mine.length, 7, `the two worker builds' three files each and the start script: ${mine}`);
  for (const f of mine) {
    const want = createHash("sha256").update(readFileSync(join(dir, f))).digest("hex").slice(0, 16);
    assert.ok(f.includes(`-${want}.`), `${f}: content hash ${want}`);
  }

  assert.deepEqual(parseCsp(html), REQUIRED_CSP);
  // A meta CSP governs only what comes after it.
  const cspAt = html.search(/<meta\s+http-equiv="Content-Security-Policy"/i);
  for (const tag of ["<script", "<link", "<style"]) {
    const at = html.indexOf(tag);
    assert.ok(at === -1 || at > cspAt, `${tag} before the CSP`);
  }
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    assert.match(m[1], /\bsrc="/, "no inline script");
    assert.equal(m[2].trim(), "", "no inline script");
  }
  assert.doesNotMatch(html, /\sstyle="/, "no inline style attribute");

  // Trunk's preload/modulepreload/stylesheet links carry SRI hashes: they must match the files.
  const tags = [...html.matchAll(/<(?:link|script)\b[^>]*>/g)].map((m) => m[0]);
  const withIntegrity = tags.filter((t) => /\bintegrity="/.test(t));
  assert.ok(withIntegrity.length >= 2, "Trunk's SRI hashes are there");
  for (const tag of withIntegrity) {
    const [, url] = tag.match(/\b(?:href|src)="([^"]+)"/);
    const [, algo, digest] = tag.match(/\bintegrity="(sha\d+)-([^"]+)"/);
    assert.ok(url.startsWith(base), `${url} is under ${base}`);
    const body = readFileSync(join(dir, url.slice(base.length)));
    assert.equal(createHash(algo).update(body).digest("base64"), digest, `integrity of ${url}`);
  }
  // Every URL index.html names is under the public URL and in the build.
  const worker = html.match(/<meta name="orthoscope-worker" content="([^"]+)"/);
  assert.ok(worker, "index.html says where the worker loader is");
  for (const m of html.matchAll(/\s(?:src|href)="([^"]+)"/g)) {
    if (m[1].startsWith("data:")) continue;
    assert.ok(m[1].startsWith(base), `${m[1]} is under ${base}`);
  }
  assert.ok(worker[1].startsWith(base) && names.includes(worker[1].slice(base.length)), worker[1]);
  return { html, names };
}

/** Opens the page at `server.url + DEMO` and checks the run and every request. */
async function checkInBrowser(server, prefix) {
  const b = await launch(server.url);
  try {
    // Collected from the first script on (Playwright's init scripts are not subject to the page's CSP).
    await b.context.addInitScript(() => {
      window.__cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    await b.page.goto(server.url + DEMO);
    let r;
    try {
      // The demo takes a second or two; a page broken by its deployment would otherwise wait 10 min.
      r = await finalReport(b.page, 120_000);
    } catch (e) {
      throw new Error(`${e.message}\nerrors: ${b.errors.join("\n")}\nrequests: ${server.requests.join(" ")}`);
    }
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.class, "1");
    assert.equal(r.report.rows, 8192);

    assert.deepEqual(await b.page.evaluate(() => window.__cspViolations), [], "CSP violations");
    assert.deepEqual(b.errors, [], "console, page or worker errors");
    assert.deepEqual(b.foreignRequests, [], "requests outside the page's origin");
    const outside = server.requests.filter((p) => !p.startsWith(prefix));
    assert.deepEqual(outside, [], `requests outside ${prefix}`);
    // The worker's own requests reached this server (so the check above covered them).
    // One of the two worker builds (plain or relaxed SIMD, by the page's probe) was loaded whole.
    const requested = (f) => server.requests.some((p) => p.startsWith(prefix + f));
    const loaded = ["worker", "worker_relaxed"].filter((w) => [`${w}_loader-`, `${w}-`, `${w}_bg-`].every(requested));
    assert.equal(loaded.length, 1, `one worker build's loader, glue and wasm were requested: ${server.requests}`);

    // The policy is really in force: an inline script is refused (and reported).
    const ran = await b.page.evaluate(() => {
      const s = document.createElement("script");
      s.textContent = "window.__inlineRan = true";
      document.head.append(s);
      return window.__inlineRan === true;
    });
    assert.equal(ran, false, "an inline script ran: the CSP is not enforced");
    await b.page.waitForFunction(() => window.__cspViolations.length > 0);
    assert.match((await b.page.evaluate(() => window.__cspViolations))[0], /^script-src/);
  } finally {
    await b.close();
  }
}

let subpath;
let relative;
before(async () => {
  assert.ok(
    existsSync(join(SUBPATH_DIST, "index.html")),
    "no sub-path build: run `trunk build --release --public-url /sub/path/ --dist target/deploy/sub/path`",
  );
  subpath = await serveAt("/sub/path/", SUBPATH_DIST);
  relative = await serveAt("/any/other/place/", DIST);
});
after(() => {
  subpath?.close();
  relative?.close();
});

test("a --public-url /sub/path/ build served at /sub/path/ runs under its CSP, every request under /sub/path/", async () => {
  const { html } = checkBuild(SUBPATH_DIST, "/sub/path/");
  assert.match(html, /<script type="module" src="\/sub\/path\/start-[0-9a-f]{16}\.js"><\/script>/);
  await checkInBrowser(subpath, "/sub/path/");
});

test("dist/ (relative URLs) copied to another sub-path runs the same", async () => {
  const { html } = checkBuild(DIST, "./");
  assert.match(html, /<script type="module" src="\.\/start-[0-9a-f]{16}\.js"><\/script>/);
  await checkInBrowser(relative, "/any/other/place/");
});
