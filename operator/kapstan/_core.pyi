"""Type stub of the compiled engine (rust/src/bindings.rs); checked against the binary by stubtest."""

__all__ = ["__version__", "build_info", "solve_json"]

__version__: str

def build_info() -> dict[str, str]:
    """Version, compiler (`rustc`), cargo `profile` and `target` triple of this build."""

def solve_json(snapshot: bytes) -> str:
    """Solve a snapshot encoded by kapstan.scheduling.rust_engine.encode; the plan as JSON (node claims
    with their ranked alternatives, pods on existing nodes, unschedulable pods), which
    kapstan.scheduling.rust_engine.decode reads."""
