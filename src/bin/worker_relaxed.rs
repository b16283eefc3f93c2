//! The Web Worker built with the `relaxed-simd` feature (Cargo.toml): the same worker as
//! `worker.rs`, whose f32 Gram kernel uses `f32x4.relaxed_madd`.

fn main() {
    #[cfg(target_arch = "wasm32")]
    orthoscope::worker::start();
}
