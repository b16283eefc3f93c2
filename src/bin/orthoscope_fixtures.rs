//! The command line with its fixture writers (cargo feature `fixtures`): what the end-to-end tests
//! call to make their files. The release CLI (`orthoscope`) is the same source without them.

#[path = "orthoscope.rs"]
mod orthoscope;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    orthoscope::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
