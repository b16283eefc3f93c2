#!/usr/bin/env bash
# README command 2 (and .ci/run): every test there is, on a fresh machine.
#   1. native unit and integration tests of the pure core (cargo test, which lists the GPU tests as
#      ignored), and the GPU Gram pass on Mesa's lavapipe (cargo feature gpu, the ignored tests);
#   2. wasm tests in headless Chromium (SIMD kernels, Blob reading in a worker; the kernel benchmarks
#      are #[ignore]d here and run by scripts/bench.sh);
#   3. the release build of the page (trunk), with a check that the worker really contains simd128,
#      and the end-to-end tests' build with the crash hooks (target/e2e-dist);
#   4. end-to-end tests: dist/ served on 127.0.0.1, driven in headless Chromium by playwright-core;
#   5. formatting and clippy (native with the test fixtures, and the wasm page and workers), warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "native tests"
# The format tests' independent oracles (gguf-py, numpy, onnx from PyPI), made once up front.
bash scripts/oracle_venv.sh >/dev/null
cargo test --locked

step "the GPU Gram pass (WGSL through wgpu) on Mesa's software Vulkan adapter"
# wgpu wants a private runtime directory; lavapipe is the adapter a machine without a GPU has.
# The GPU tests are #[ignore]d (a plain cargo test has no adapter to promise): run here, once, where
# a missing adapter fails them. The by-hand ones (two timings, a pass of minutes) are skipped.
XDG_RUNTIME_DIR=$(mktemp -d) WGPU_BACKEND=vulkan cargo test --locked --features "gpu fixtures" --test gpu_gram --test gpu_pass \
  -- --ignored --skip widest_pass_finishes_within_its_memory --skip timing_4096_by_1024 --skip gram_kernel_gflops_at_4096

step "wasm tests in headless Chromium"
# The runner's default limit is 20 s for the whole file, which a slow CI machine can exceed.
export WASM_BINDGEN_TEST_TIMEOUT=300
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
CHROMEDRIVER=/usr/bin/chromedriver \
  cargo test --locked --release --target wasm32-unknown-unknown --test wasm_browser -- --nocapture
# Again with the relaxed-SIMD kernel compiled in: the plain and relaxed f32 kernels side by side.
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
CHROMEDRIVER=/usr/bin/chromedriver \
  cargo test --locked --release --target wasm32-unknown-unknown --features relaxed-simd --test wasm_browser -- --nocapture

step "release build of the page"
trunk build --release
# For the deploy test (tests/e2e/deploy.test.mjs): the same site built for, and served at, a sub-path.
trunk build --release --public-url /sub/path/ --dist target/deploy/sub/path
# Read the whole disassembly first: `grep -q` on a pipe would close it early and pipefail would
# report wasm2wat's SIGPIPE as a failure. The worker's wasm has a content-hashed name (postbuild.mjs).
wat=$(wasm2wat --enable-all dist/worker_bg-*.wasm)
grep -q 'f64x2.mul' <<<"$wat" || { echo "worker wasm has no SIMD Gram kernel"; exit 1; }
grep -q 'f32x4.mul' <<<"$wat" || { echo "worker wasm has no SIMD dot kernel"; exit 1; }
# Safari rejects a whole module with one relaxed instruction: the plain build must have none.
# (Instructions only: the name "relaxed-simd" may appear in its data as text.)
if grep -q '\.relaxed_' <<<"$wat"; then echo "the plain worker wasm contains relaxed-SIMD instructions"; exit 1; fi
wat=$(wasm2wat --enable-all dist/worker_relaxed_bg-*.wasm)
grep -q 'f32x4.relaxed_madd' <<<"$wat" || { echo "relaxed worker wasm has no f32x4.relaxed_madd"; exit 1; }
unset wat
echo "dist/ gzipped: $(tar -cf - dist | gzip -9 | wc -c) bytes"
# The end-to-end tests' own build: the release page plus the crash hooks (cargo feature
# test-hooks), which the release dist/ must not contain (tests/e2e/choose.test.mjs checks both).
trunk build --release --features test-hooks --dist target/e2e-dist

step "end-to-end tests in headless Chromium"
cargo build --locked --release --bin orthoscope
# The fixture writers (generate-shards, generate-gguf, generate-sparse, hostile, corpus) are not in the
# release CLI: a separate test binary with the `fixtures` feature.
cargo build --locked --release --features fixtures --bin orthoscope-fixtures
node --test --test-concurrency=1 tests/e2e/

step "formatting and clippy"
cargo fmt --check
cargo clippy --locked --all-targets --features "fixtures gpu" -- -D warnings
cargo clippy --locked --release --target wasm32-unknown-unknown --lib --bins -- -D warnings
cargo clippy --locked --release --target wasm32-unknown-unknown --lib --bins --features relaxed-simd -- -D warnings
cargo clippy --locked --release --target wasm32-unknown-unknown --lib --bins --features test-hooks -- -D warnings
