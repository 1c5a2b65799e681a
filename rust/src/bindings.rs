//! The Python face of the crate: `kapstan._core`. Keep it thin: convert, call, convert back.
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::info;

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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", info::VERSION)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    Ok(())
}
