//! The Web Worker: registers the message handler, nothing else (see `worker`).

fn main() {
    #[cfg(target_arch = "wasm32")]
    orthoscope::worker::start();
}
