//! Build information about the engine, reported by `kapstan simulate` and the benchmarks.

/// Version of the crate, which is also the version of the Python package.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// `rustc --version` of the compiler that built the engine.
pub const RUSTC: &str = env!("KAPSTAN_RUSTC_VERSION");
/// Cargo profile: `release` or `debug`. Benchmarks refuse to time a debug build.
pub const PROFILE: &str = env!("KAPSTAN_BUILD_PROFILE");
/// Target triple the engine was compiled for.
pub const TARGET: &str = env!("KAPSTAN_TARGET");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_info_is_recorded() {
        assert!(!VERSION.is_empty());
        assert!(RUSTC.starts_with("rustc "), "rustc version was {RUSTC:?}");
        assert!(PROFILE == "release" || PROFILE == "debug");
        assert!(TARGET.contains('-'));
    }
}
