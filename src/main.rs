//! The web page: mounts the Leptos app, nothing else (see `ui`).

fn main() {
    #[cfg(target_arch = "wasm32")]
    orthoscope::ui::mount();
}
