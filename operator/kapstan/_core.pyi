"""Type stub of the compiled engine (rust/src/bindings.rs); checked against the binary by stubtest."""

from typing import TypedDict

class BuildInfo(TypedDict):
    version: str
    rustc: str
    profile: str
    target: str

__version__: str

def build_info() -> BuildInfo: ...
