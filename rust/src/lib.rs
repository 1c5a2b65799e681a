//! kapstan's scheduling core. The solver itself lives in pure-Rust modules (no pyo3), so it can be
//! tested and benchmarked with cargo alone; `bindings` is the thin layer that Python sees as
//! `kapstan._core`.

mod bindings;
pub mod info;
