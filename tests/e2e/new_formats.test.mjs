// End to end: the formats a researcher keeps models in besides safetensors — a BF16 PyTorch
// checkpoint, a compressed .npz, an MLX 4-bit folder, an IQ4_XS GGUF — each dropped in the page
// gives the CLI's ε on the same files, exactly (both are exact passes over the same decoded rows).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { serve, openApp, analyseFiles, cli, cliReport, OUT, ROOT } from "./harness.mjs";

let server;
before(async () => {
  mkdirSync(OUT, { recursive: true });
  server = await serve(join(ROOT, "dist"));
});
after(() => server?.close());

// Both passes are exact; the page's simd128 f32 tiles and the CLI's AVX2 ones add in different
// orders, so they agree to rounding, not bit for bit (1e-9 on these matrices; 2e-9 was seen at
// 256 × 20, where each cosine is a sum of 20 products).
const within = (tolerance) => (a, b, what) => assert.ok(Math.abs(a - b) <= tolerance, `${what}: browser ${a} CLI ${b}`);
const exactly = within(1e-9);
const filesIn = (dir) => readdirSync(dir).sort().map((f) => join(dir, f));

async function sameAsCli(files, check, close = exactly) {
  const want = cliReport(...(Array.isArray(files) ? files : [files]));
  const b = await openApp(server);
  try {
    const r = await analyseFiles(b.page, files);
    assert.equal(r.status, "done", r.text);
    assert.equal(r.report.exact, true);
    close(r.report.epsilon, want.epsilon, "ε");
    close(r.report.mu, want.mu, "μ");
    assert.equal(r.report.dtype, want.dtype);
    assert.equal(r.report.quantised, want.quantised);
    await check(r, b);
    assert.deepEqual(b.errors, []);
  } finally { await b.close(); }
}

test("a BF16 PyTorch checkpoint (torch.save's zip) equals the CLI, read without unpickling", async () => {
  const path = join(OUT, "checkpoint.pt");
  cli("generate-torch", "--out", path, "--rows", "3000", "--dim", "256", "--dtype", "bf16");
  await sameAsCli(path, (r) => {
    assert.equal(r.report.tensor, "model.embed_tokens.weight");
    assert.equal(r.report.dtype, "BF16");
    assert.equal(r.report.quantised, false);
  });
});

test("a compressed .npz equals the CLI, its member inflated as a stream", async () => {
  const path = join(OUT, "params.npz");
  cli("generate-npz", "--out", path, "--rows", "3000", "--dim", "256", "--compressed");
  await sameAsCli(path, (r) => assert.equal(r.report.rows, 3000));
});

test("an MLX 4-bit model folder equals the CLI, and the card says the weights are quantised", async () => {
  const dir = join(OUT, "mlx-q4");
  rmSync(dir, { recursive: true, force: true });
  cli("generate-mlx", dir, "--rows", "3000", "--dim", "512", "--bits", "4", "--group", "64");
  await sameAsCli(filesIn(dir), async (r, b) => {
    assert.equal(r.report.dtype, "mlx-q4-g64");
    assert.equal(r.report.quantised, true);
    assert.equal(r.report.dim, 512);
    assert.match(await b.page.textContent('[data-testid="quantised"]'), /quantised values/);
  });
});

test("an IQ4_XS GGUF equals the CLI", async () => {
  const path = join(OUT, "model-IQ4_XS.gguf");
  cli("generate-gguf", path, "--rows", "3000", "--dim", "512", "--type", "IQ4_XS");
  await sameAsCli(path, (r) => {
    assert.equal(r.report.dtype, "IQ4_XS");
    assert.equal(r.report.quantised, true);
  }, within(1e-8));
});

// ONNX fixtures written by onnx's own helpers (tests/oracle/onnx_writer.py, in the oracle venv).
function onnxCases() {
  const dir = join(OUT, "onnx");
  rmSync(dir, { recursive: true, force: true });
  const py = execFileSync("bash", [join(ROOT, "scripts/oracle_venv.sh")], { encoding: "utf8" }).trim();
  const cases = JSON.parse(execFileSync(py, [join(ROOT, "tests/oracle/onnx_writer.py"), dir], { encoding: "utf8" }));
  return { dir, cases };
}

test("an ONNX export with its external data file, and an int8 one behind DequantizeLinear, equal the CLI", async () => {
  const { dir, cases } = onnxCases();
  const external = cases.external.files.map((f) => join(dir, f));
  await sameAsCli(external, (r) => {
    assert.equal(r.report.tensor, "model.embed_tokens.weight");
    assert.ok(Math.abs(r.report.epsilon - cases.external.eps) < 1e-7, `ε ${r.report.epsilon} vs numpy ${cases.external.eps}`);
  }, within(1e-8));
  await sameAsCli(join(dir, cases.int8_dq.files[0]), (r) => {
    assert.equal(r.report.dtype, "int8 (DequantizeLinear)");
    assert.equal(r.report.quantised, true);
  }, within(1e-8));
});
