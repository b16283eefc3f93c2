// Loads the analysis worker's wasm (built by Trunk from src/bin/worker.rs).
importScripts("./worker.js");
wasm_bindgen({ module_or_path: "./worker_bg.wasm" });
