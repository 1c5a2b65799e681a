//! The Python face of the crate: `kapstan._core`. Keep it thin: convert, call, convert back.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{info, solver};

/// Version, compiler, profile and target of this build of the engine.
#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("version", info::VERSION)?;
    out.set_item("rustc", info::RUSTC)?;
    out.set_item("profile", info::PROFILE)?;
    out.set_item("target", info::TARGET)?;
    Ok(out)
}

/// Solve a snapshot given as JSON bytes (see kapstan/scheduling/rust_engine.py); returns the plan as
/// JSON, each node claim with its ranked alternatives. The GIL is released while solving.
#[pyfunction]
fn solve_json(py: Python<'_>, snapshot: Vec<u8>) -> PyResult<String> {
    py.detach(|| solver::solve_json(&snapshot))
        .map_err(PyValueError::new_err)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", info::VERSION)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(solve_json, m)?)?;
    Ok(())
}
