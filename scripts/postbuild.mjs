// Trunk post_build hook (Trunk.toml [[hooks]]), run on the staged site before Trunk moves it to dist/.
// It makes the site run under the page's Content-Security-Policy (written in index.html) and gives
// every asset a content-hashed name, so `trunk build --release [--public-url …]` alone yields a dist/
// that any static host can serve and a redeploy never mixes old and new files:
//   1. Trunk's inline start-up <script type="module"> becomes start-<hash>.js: an inline script would
//      need 'unsafe-inline' in script-src. Trunk's live-reload script (`trunk serve` only) is dropped:
//      inline it is blocked by the CSP, and in a file the dev server could not fill in its address.
//   2. The workers' files, which Trunk leaves unhashed (the page names them at run time), get
//      content-hashed names; for each of the two worker builds (plain simd128 `worker`, relaxed-SIMD
//      `worker_relaxed`) a loader is written from worker_loader.js to load them, and index.html says
//      where the loaders are in <meta name="orthoscope-worker"> and <meta name="orthoscope-worker-relaxed">
//      (read by src/worker/client.rs, which picks one with a WebAssembly.validate probe).
//   3. Checks, so a Trunk upgrade that changes its output fails the build instead of the page: the CSP
//      meta comes before anything it governs, no inline script or style attribute is left, and every
//      file index.html names exists.
// Plain Node (no packages): Trunk's output is regular enough for string edits, and each edit checks it
// matched.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const fail = (message) => {
  console.error(`postbuild: ${message}`);
  process.exit(1);
};

const staging = process.env.TRUNK_STAGING_DIR;
if (!staging) fail("TRUNK_STAGING_DIR is not set; this script runs as Trunk's post_build hook");
// Trunk passes the public URL as configured: "./" by default (Trunk.toml), or --public-url's value.
let base = process.env.TRUNK_PUBLIC_URL || "./";
if (!base.endsWith("/")) base += "/";

/** 16 hex digits of SHA-256: as long as Trunk's own hashes, and collisions are out of reach. */
const hash = (bytes) => createHash("sha256").update(bytes).digest("hex").slice(0, 16);
const path = (name) => join(staging, name);
const read = (name) => {
  if (!existsSync(path(name))) fail(`${name} is missing from the build`);
  return readFileSync(path(name));
};

/** Renames a staged file to `<stem>-<hash of its bytes><ext>` and returns the new name. */
function hashName(name, stem, ext) {
  const hashed = `${stem}-${hash(read(name))}${ext}`;
  renameSync(path(name), path(hashed));
  return hashed;
}

/** Replaces exactly one occurrence of `from` (fails if there is none or several). */
function replaceOnce(text, from, to, where) {
  const parts = text.split(from);
  if (parts.length !== 2) fail(`expected "${from}" once in ${where}, found it ${parts.length - 1} times`);
  return parts.join(to);
}

// 2. The workers: wasm and glue first, then the loader that names them.
const template = read("worker_loader.js").toString("utf8");
/** Hashes one worker build's files and writes its loader; returns the loader's name. */
function worker(stem) {
  const wasm = hashName(`${stem}_bg.wasm`, `${stem}_bg`, ".wasm");
  const glue = hashName(`${stem}.js`, stem, ".js");
  let loader = replaceOnce(template, '"./worker.js"', `"./${glue}"`, "worker_loader.js");
  loader = replaceOnce(loader, '"./worker_bg.wasm"', `"./${wasm}"`, "worker_loader.js");
  const name = `${stem}_loader-${hash(loader)}.js`;
  writeFileSync(path(name), loader);
  return name;
}
const loaderName = worker("worker");
const relaxedLoaderName = worker("worker_relaxed");
rmSync(path("worker_loader.js"));

let html = read("index.html").toString("utf8");

// 1. Inline scripts out of index.html. Comments are matched first, and kept, so that a tag named in
// a comment is not taken for a real one.
const COMMENT = /<!--[\s\S]*?-->/g;
const INLINE_SCRIPT = /<!--[\s\S]*?-->|<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi;
html = html.replace(INLINE_SCRIPT, (whole, attrs, body) => {
  if (whole.startsWith("<!--") || /\bsrc\s*=/i.test(attrs) || body.trim() === "") return whole;
  if (body.includes("{{__TRUNK_ADDRESS__}}")) {
    console.log("postbuild: dropped trunk serve's live-reload script (the CSP forbids inline scripts)");
    return "";
  }
  const name = `start-${hash(body)}.js`;
  writeFileSync(path(name), body);
  return `<script${attrs} src="${base}${name}"></script>`;
});

// 2. Where the page finds the worker.
if (/name="orthoscope-worker"/.test(html)) fail("index.html already has an orthoscope-worker meta tag");
html = replaceOnce(
  html,
  "</head>",
  `\n    <meta name="orthoscope-worker" content="${base}${loaderName}" />` +
    `\n    <meta name="orthoscope-worker-relaxed" content="${base}${relaxedLoaderName}" />\n  </head>`,
  "index.html",
);

// 3. Checks, on the markup without its comments.
const markup = html.replace(COMMENT, "");
const csp = markup.match(/<meta\s+http-equiv="Content-Security-Policy"\s+content="([^"]*)"/i);
if (!csp) fail("index.html has no Content-Security-Policy meta tag");
const cspAt = markup.indexOf(csp[0]);
for (const tag of ["<script", "<link", "<style"]) {
  const at = markup.indexOf(tag);
  // A meta CSP only governs what comes after it.
  if (at !== -1 && at < cspAt) fail(`a ${tag}> comes before the Content-Security-Policy meta tag`);
}
const policy = new Map(csp[1].split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...v]) => [name, v]));
for (const name of ["script-src", "style-src"]) {
  const values = policy.get(name) ?? policy.get("default-src") ?? [];
  if (values.includes("'unsafe-inline'") || values.includes("'unsafe-eval'")) fail(`the CSP's ${name} is not strict`);
}
for (const m of markup.matchAll(INLINE_SCRIPT)) {
  if (!/\bsrc\s*=/i.test(m[1]) && m[2].trim() !== "") fail("an inline <script> is left in index.html");
}
if (/<style\b/i.test(markup) || /\sstyle\s*=/i.test(markup)) fail("index.html has inline styles (blocked by style-src)");
for (const m of markup.matchAll(/\s(?:src|href|content)="([^"]+)"/g)) {
  const url = m[1];
  if (!url.startsWith(base) || url === base) continue;
  const name = url.slice(base.length);
  if (!existsSync(path(name))) fail(`index.html names ${url}, which the build does not contain`);
}
writeFileSync(path("index.html"), html);
console.log(`postbuild: worker loaders ${loaderName}, ${relaxedLoaderName}; public URL ${base}`);
