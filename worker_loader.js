// Loads the analysis worker's wasm (built by Trunk from src/bin/worker.rs).
// A trap inside an async task surfaces as an unhandled rejection, which a worker does not report to
// the page: rethrown from a task it becomes an error event there, and the page replaces the workers.
self.addEventListener("unhandledrejection", (e) => setTimeout(() => { throw e.reason; }));
importScripts("./worker.js");
wasm_bindgen({ module_or_path: "./worker_bg.wasm" });
