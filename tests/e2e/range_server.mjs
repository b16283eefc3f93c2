// A second local server for models opened by URL: another origin than the app's (its own port on
// 127.0.0.1), serving files from a folder with CORS and single-range 206 answers, and misbehaving
// on purpose by path prefix:
//   /ok/PATH       CORS, Range honoured (Access-Control-Expose-Headers: Content-Range, Content-Length)
//   /nocors/PATH   Range honoured but no CORS headers (the browser refuses to hand the bytes over)
//   /norange/PATH  CORS but Range ignored: 200 with the whole file
//   /gated/PATH    401, as a gated model answers an anonymous request
//   /cut/N/PATH    as /ok/, but any answer reaching past byte N of the file is cut off there (the
//                  socket is destroyed mid-body: a dropped connection)
//   /stall/N/PATH  as /ok/, but a request reaching past byte N is never answered (a hung read)
// A missing file under /ok/ is a 404 with CORS. Every request is logged with its method, path,
// Range header, status and the body bytes actually written.
import http from "node:http";
import { openSync, readSync, closeSync, statSync } from "node:fs";
import { resolve, sep } from "node:path";

const CORS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "Content-Range, Content-Length",
};

/** Parses a single `bytes=a-b`, `bytes=a-` or `bytes=-n` range against `size`; null if absent. */
function parseRange(header, size) {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return { invalid: true };
  let start, end;
  if (m[1] === "") { start = Math.max(0, size - Number(m[2])); end = size - 1; }
  else { start = Number(m[1]); end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1); }
  if (start >= size || end < start) return { unsatisfiable: true };
  return { start, end };
}

function readSlice(path, start, end) {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(end - start + 1);
    readSync(fd, buf, 0, buf.length, start);
    return buf;
  } finally { closeSync(fd); }
}

/** Starts the server on 127.0.0.1 at a free port; resolves to {url, origin, log, bytesSent, reset, close}. */
export async function startRangeServer(root) {
  const log = [];
  const server = http.createServer((req, res) => {
    const entry = { method: req.method, path: req.url, range: req.headers.range ?? null, status: 0, bytes: 0 };
    log.push(entry);
    const send = (status, headers, body) => {
      entry.status = status;
      res.writeHead(status, headers);
      if (body && req.method !== "HEAD") { entry.bytes += body.length; res.end(body); } else res.end();
    };
    const url = new URL(req.url, "http://x");
    const parts = url.pathname.split("/").slice(1).map(decodeURIComponent);
    const mode = parts.shift();
    let cutAt = Infinity;
    if (mode === "cut" || mode === "stall") cutAt = Number(parts.shift());
    const cors = mode === "nocors" ? {} : CORS;
    if (req.method === "OPTIONS") {
      // A preflight: logged so a test can assert none happens (Range alone needs none).
      return send(204, { ...cors, "Access-Control-Allow-Headers": "Range", "Access-Control-Allow-Methods": "GET, HEAD" });
    }
    const path = resolve(root, ...parts);
    if (!path.startsWith(resolve(root) + sep)) return send(403, cors, Buffer.from("outside the root"));
    if (mode === "gated") return send(401, cors, Buffer.from("Access to this model is restricted. Log in."));
    let size;
    try { const st = statSync(path); if (!st.isFile()) throw new Error("not a file"); size = st.size; }
    catch { return send(404, cors, Buffer.from("Entry not found")); }
    const base = { ...cors, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream", "Cache-Control": "no-store" };
    const range = mode === "norange" ? null : parseRange(req.headers.range, size);
    if (!range) {
      const body = req.method === "HEAD" ? null : readSlice(path, 0, size - 1);
      return send(200, { ...base, "Content-Length": String(size) }, body);
    }
    if (range.invalid || range.unsatisfiable) return send(416, { ...base, "Content-Range": `bytes */${size}` });
    const { start, end } = range;
    const headers = { ...base, "Content-Length": String(end - start + 1), "Content-Range": `bytes ${start}-${end}/${size}` };
    if (end < cutAt) return send(206, headers, readSlice(path, start, end));
    if (mode === "stall") return; // held open until the client or the server gives up
    // Cut: headers promise the whole range, the body stops at byte cutAt, the socket dies.
    entry.status = 206;
    res.writeHead(206, headers);
    if (start < cutAt) {
      const part = readSlice(path, start, cutAt - 1);
      entry.bytes += part.length;
      res.write(part);
    }
    res.flushHeaders();
    setTimeout(() => req.socket.destroy(), 20);
  });
  await new Promise((ok, fail) => { server.once("error", fail); server.listen(0, "127.0.0.1", ok); });
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    url: origin + "/",
    log,
    /** Body bytes written for requests whose path starts with `prefix`. */
    bytesSent: (prefix = "/") => log.filter((e) => e.path.startsWith(prefix)).reduce((n, e) => n + e.bytes, 0),
    reset: () => { log.length = 0; },
    close: () => new Promise((ok) => { server.closeAllConnections?.(); server.close(ok); }),
  };
}
