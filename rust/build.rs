//! Records how the engine was built so `kapstan._core.build_info()` can report it.
use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .unwrap_or_default();
    println!("cargo:rustc-env=KAPSTAN_RUSTC_VERSION={}", version.trim());
    println!(
        "cargo:rustc-env=KAPSTAN_BUILD_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
    println!(
        "cargo:rustc-env=KAPSTAN_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
}
