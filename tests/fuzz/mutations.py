"""Seeded mutations of the scenario manifests: what a careless hand, a broken generator or a hostile
user feeds `kapstan simulate`.

`mutate(seed)` is a pure function of the seed: it picks a catalog and a workload from
`tests/scenarios/`, applies one to three mutations to the decoded documents (numbers to extremes, types
swapped, keys dropped, strings to control characters or megabytes, deep nesting, wrong kinds) or to the
text (duplicated lines and documents, alias bombs, undecodable bytes), and returns the bytes of one
manifest file.
"""

from __future__ import annotations

import copy
import functools
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

SCENARIOS = Path(__file__).parent.parent / "scenarios"
SCENARIO_SETS = [
    *(
        (catalog, workload)
        for catalog in ("article-catalog-mds.yaml", "article-catalog-clusterclass.yaml")
        for workload in ("inflate-8x1cpu.yaml", "inflate-anti-affinity.yaml", "one-3cpu-pod.yaml")
    ),
    ("priced-catalog.yaml", "priced-10x2cpu.yaml"),
    ("limits-30x1cpu.yaml",),
]
"""The file sets `tests/test_scenarios.py` plans: each a whole, valid input before mutation."""

EXTREME_NUMBERS: list[object] = [
    0,
    -1,
    2**31 - 1,
    2**31,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    2**64 + 1,
    10**30,
    10**45,
    -(2**63),
    1e308,
    float("inf"),
    float("nan"),
    0.5,
    "1e99999999",
    "1e-99999999",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "99999999999999h",
    "1/0%",
    "+-5",
    "9" * 45,
    "10000000Gi",
    # Valid but at the int64 edge once in milli-units: these reach both engines' arithmetic.
    "9223372036854775807m",
    "4611686018427387903m",
    "9223372036854775",
    "9223372036854775.807",
    "8Pi",
    "-5",
    "0.0000000001",
    "1.5h",
    "* * * * * *",
    "101%",
    "70000",
]
STRANGE_STRINGS: list[str] = [
    "",
    "\x1b[31mred\x1b[0m",
    "line one\nline two",
    "nul\x00byte",
    "tab\there\r\n",
    "\u2028separator",
    "x" * 100_000,
    "émoji 🚀",
    "${HOME}",
    "'quoted\"",
]
# A "billion laughs" in one flow sequence: 9^9 leaves once expanded, a few hundred bytes as text.
ALIAS_BOMB = (
    "fuzz-bomb: [&b0 [lol, lol, lol, lol, lol, lol, lol, lol, lol], "
    + ", ".join(f"&b{i} [{', '.join([f'*b{i - 1}'] * 9)}]" for i in range(1, 9))
    + "]"
)
KINDS = [
    ("v1", "Pod"),
    ("v1", "Node"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"),
    ("karpenter.sh/v1", "NodePool"),
    ("karpenter.sh/v1", "NodeClaim"),
    ("karpenter.sh/v1beta1", "NodePool"),
    ("cluster.x-k8s.io/v1beta2", "MachineDeployment"),
    ("karpenter.cluster.x-k8s.io/v1alpha1", "ClusterAPINodeClass"),
    ("infrastructure.cluster.x-k8s.io/v1beta1", "OpenStackMachineTemplate"),
    ("v1", "List"),
    ("", ""),
]
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SENTINEL = "__fuzz_alias__"
DEEP_SENTINEL = "__fuzz_deep__"
_DEEP = re.compile(DEEP_SENTINEL + r"(\d+)")

Path_ = list[str | int]


def _paths(tree: Any, prefix: Path_ | None = None) -> list[Path_]:
    """Every path to a value in the tree (the root excluded)."""
    out: list[Path_] = []
    base = prefix or []
    children: list[tuple[str | int, Any]] = []
    if isinstance(tree, dict):
        children = list(tree.items())
    elif isinstance(tree, list):
        children = list(enumerate(tree))
    for key, child in children:
        path = [*base, key]
        out.append(path)
        out.extend(_paths(child, path))
    return out


def _get(tree: Any, path: Path_) -> Any:
    for step in path:
        tree = tree[step]
    return tree


def _set(tree: Any, path: Path_, value: Any) -> None:
    _get(tree, path[:-1])[path[-1]] = value


def _leaves(tree: Any) -> list[Path_]:
    return [p for p in _paths(tree) if not isinstance(_get(tree, p), dict | list)]


def _deep(depth: int) -> str:
    """Nesting `depth` levels deep as flow YAML (PyYAML's dumper would recurse as deep itself)."""
    return (
        "[" * (depth // 2)
        + "{k: " * (depth - depth // 2)
        + "bottom"
        + "}" * (depth - depth // 2)
        + "]" * (depth // 2)
    )


def _number_to_extreme(rng: random.Random, docs: list[Any]) -> None:
    doc = rng.choice(docs)
    numeric = [
        p for p in _leaves(doc) if isinstance(_get(doc, p), int | float) or _looks_numeric(_get(doc, p))
    ]
    paths = numeric or _leaves(doc)
    if paths:
        _set(doc, rng.choice(paths), rng.choice(EXTREME_NUMBERS))


def _looks_numeric(value: object) -> bool:
    return isinstance(value, str) and bool(value) and value[0] in "0123456789.-+"


def _swap_type(rng: random.Random, docs: list[Any]) -> None:
    doc = rng.choice(docs)
    paths = _paths(doc)
    if paths:
        path = rng.choice(paths)
        old = _get(doc, path)
        _set(doc, path, rng.choice([[], {}, "x", 3, None, True, [old], {"x": old}, -7.5]))


def _drop_key(rng: random.Random, docs: list[Any]) -> None:
    doc = rng.choice(docs)
    paths = [p for p in _paths(doc) if isinstance(_get(doc, p[:-1]), dict)]
    if paths:
        path = rng.choice(paths)
        del _get(doc, path[:-1])[path[-1]]


def _strange_string(rng: random.Random, docs: list[Any]) -> None:
    doc = rng.choice(docs)
    paths = _paths(doc)
    if paths:
        _set(doc, rng.choice(paths), rng.choice(STRANGE_STRINGS))


def _strange_key(rng: random.Random, docs: list[Any]) -> None:
    doc = rng.choice(docs)
    maps = [p for p in _paths(doc) if isinstance(_get(doc, p), dict)]
    if maps:
        rng.choice([_get(doc, p) for p in maps])[rng.choice(STRANGE_STRINGS[1:6])] = "v"


def _nest_deeply(rng: random.Random, docs: list[Any]) -> None:
    doc = rng.choice(docs)
    paths = _paths(doc)
    if paths:
        _set(doc, rng.choice(paths), f"{DEEP_SENTINEL}{rng.choice([70, 1100])}")


def _wrong_kind(rng: random.Random, docs: list[Any]) -> None:
    doc = rng.choice(docs)
    if not isinstance(doc, dict):
        return
    api_version, kind = rng.choice(KINDS)
    doc["apiVersion"], doc["kind"] = api_version, kind
    if kind == "List" and rng.random() < 0.7:
        doc["items"] = rng.choice([{"a": 1}, "items", 5, [doc.get("spec")], [dict(doc, kind="Pod")]])


def _huge_replicas(rng: random.Random, docs: list[Any]) -> None:
    for doc in docs:
        spec = doc.get("spec") if isinstance(doc, dict) else None
        if isinstance(spec, dict) and "replicas" in spec:
            spec["replicas"] = rng.choice([2**31 - 1, 10**30, 150_000, -1, "8"])
            return


def _alias(rng: random.Random, docs: list[Any]) -> None:
    doc = rng.choice(docs)
    paths = _paths(doc)
    if paths:
        _set(doc, rng.choice(paths), SENTINEL)


TREE_MUTATIONS: list[Callable[[random.Random, list[Any]], None]] = [
    _number_to_extreme,
    _number_to_extreme,
    _number_to_extreme,
    _swap_type,
    _swap_type,
    _drop_key,
    _drop_key,
    _strange_string,
    _strange_key,
    _nest_deeply,
    _wrong_kind,
    _huge_replicas,
    _alias,
]


def _text_mutation(rng: random.Random, text: str) -> bytes:
    lines = text.split("\n")
    choice = rng.randrange(6)
    if choice == 0:  # a duplicated line: duplicated keys, or a second list item
        at = rng.randrange(len(lines))
        lines.insert(at, lines[at])
    elif choice == 1:  # a duplicated key inside one mapping (PyYAML keeps the last, as kubectl does)
        keyed = [i for i, line in enumerate(lines) if line.rstrip().endswith(":") and i + 1 < len(lines)]
        if keyed:
            at = rng.choice(keyed)
            lines[at + 1 : at + 1] = [lines[at + 1]]
    elif choice == 2:  # an undecodable byte
        data = bytearray(text.encode())
        data.insert(rng.randrange(len(data) + 1), rng.choice([0xFF, 0xC3, 0x80, 0xFE]))
        return bytes(data)
    elif choice == 3:  # a control character in the raw text
        at = rng.randrange(len(lines))
        lines[at] += rng.choice(["\x1b", "\x00", "\x07", "\x85"])
    elif choice == 4:  # a line cut short
        at = rng.randrange(len(lines))
        lines[at] = lines[at][: rng.randrange(len(lines[at]) + 1)]
    else:  # an unclosed flow collection
        at = rng.randrange(len(lines))
        lines[at] += " [unclosed"
    return "\n".join(lines).encode()


def _dump(docs: list[Any]) -> str:
    parts = []
    for doc in docs:
        text = yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=10**6)
        text = _DEEP.sub(lambda m: _deep(int(m[1])), text)
        if SENTINEL in text:
            text = ALIAS_BOMB + "\n" + text.replace(SENTINEL, "*b8")
        parts.append(text)
    return "---\n".join(parts)


@functools.cache
def _documents(files: tuple[str, ...]) -> list[Any]:
    return [d for f in files for d in yaml.safe_load_all((SCENARIOS / f).read_text()) if d is not None]


def mutate(seed: int) -> bytes:
    """The mutated manifest for `seed`: one scenario set, one to three mutations."""
    rng = random.Random(seed)
    files = rng.choice(SCENARIO_SETS)
    docs = copy.deepcopy(_documents(files))
    for _ in range(rng.choice([1, 1, 2, 3])):
        rng.choice(TREE_MUTATIONS)(rng, docs)
    text = _dump(docs)
    if rng.random() < 0.15:
        return _text_mutation(rng, text)
    return text.encode()
