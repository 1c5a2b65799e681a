"""The repository's documentation is self-contained and current: every pointer into ``docs/architecture.md``
names a section that exists, nothing points at design notes outside the repository, and every file the
architecture document and CONTRIBUTING.md name is still where they say (modules move; the map must follow)."""

from __future__ import annotations

import re
from pathlib import Path

from kapstan.cli_run import run_command

ROOT = Path(__file__).parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SCANNED = ("operator", "tests", "bench", "rust", "docs", "README.md", "CONTRIBUTING.md")
SUFFIXES = {".py", ".pyi", ".rs", ".md", ".toml"}
POINTER = re.compile(r"docs/architecture\.md#([a-z0-9-]+)")
GUIDES = (ARCHITECTURE, ROOT / "CONTRIBUTING.md")
PATH_IN_BACKTICKS = re.compile(r"`([\w./-]+/[\w.-]*(?:\.(?:py|pyi|rs|md|yaml|toml)|/))`")
# The guides name package modules relative to the package, and the controllers' subfolders from there.
PATH_BASES = (ROOT, ROOT / "operator" / "kapstan", ROOT / "operator" / "kapstan" / "controllers")
OUTSIDE = re.compile(r"\b(?:DESIGN|STYLE)\.md\b|\.\./shared[/]")


def _anchor(heading: str) -> str:
    """The fragment GitHub gives a Markdown heading: lowercase, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def _sources() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [f for f in candidates if f.suffix in SUFFIXES and f.is_file() and f != Path(__file__)]
    return files


def test_every_pointer_names_a_section_of_the_architecture_document() -> None:
    sections = {
        _anchor(line.lstrip("#")) for line in ARCHITECTURE.read_text().splitlines() if line.startswith("#")
    }
    dangling = [
        f"{path.relative_to(ROOT)}: #{anchor}"
        for path in _sources()
        for anchor in POINTER.findall(path.read_text())
        if anchor not in sections
    ]
    assert dangling == [], f"no such section in {ARCHITECTURE.relative_to(ROOT)}: {dangling}"


def test_nothing_points_outside_the_repository() -> None:
    outside = [str(path.relative_to(ROOT)) for path in _sources() if OUTSIDE.search(path.read_text())]
    assert outside == []


def test_every_path_the_guides_name_exists() -> None:
    missing = [
        f"{guide.name}: {path}"
        for guide in GUIDES
        for path in sorted(set(PATH_IN_BACKTICKS.findall(guide.read_text())))
        if not any((base / path.rstrip("/")).exists() for base in PATH_BASES)
    ]
    assert missing == [], f"named in the guides but not in the repository: {missing}"


def test_the_readme_lists_every_flag_of_kapstan_run() -> None:
    # The README's "Running kapstan" block is where users learn the flags (docs/architecture.md's Stable
    # interfaces points there); an option added to the command and not to it is undocumented. A boolean
    # pair is listed by either of its flags.
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("## Running kapstan") :]
    usage = block[: block.index("```", block.index("```") + 3)]
    listed = set(re.findall(r"--[a-z][a-z-]*[a-z]", usage))
    missing = [
        option.opts[0] for option in run_command.params if not listed & {*option.opts, *option.secondary_opts}
    ]
    assert missing == [], f"kapstan run options the README does not list: {missing}"
