//! kapstan's scheduling core. The solver lives in pure-Rust modules (`solver`, no pyo3), so it can be
//! tested and benchmarked with cargo alone; `bindings` is the thin layer Python sees as `kapstan._core`.

mod bindings;
pub mod info;
pub mod solver;
