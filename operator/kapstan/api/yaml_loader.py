"""YAML loading that a few hundred hostile bytes cannot turn into minutes of work or a traceback.

PyYAML's safe loader still expands aliases into shared objects (a "billion laughs" document is small
in memory, but anything that walks it, str() in an error message or a validator, walks every copy),
follows nesting by recursion, and converts integers of any length. Kubernetes' own decoder bounds all
three; this loader does too: at most MAX_NODES nodes per document with aliases counted expanded, at most
MAX_DEPTH levels of nesting (aliases included), no alias to a node that contains it, and integers of at
most MAX_INT_DIGITS characters. Errors are one line, with the position.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NoReturn

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

MAX_NODES = 100_000
"""Expanded nodes per document: a NodePool is about a hundred, a large Deployment a few thousand."""
MAX_DEPTH = 64
"""Nesting levels per document; Kubernetes objects stay under twenty."""
MAX_INT_DIGITS = 4300
"""Python's own limit for int(), enforced here so that the error names the line; shorter integers reach
the fields, whose bounds then name the object and field."""


class _PurePythonParser(Reader, Scanner, Parser):
    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


# libyaml's scanner and parser are six times faster; the composer stays ours (below) either way.
_Parser: Any = getattr(yaml, "cyaml", None)
_Parser = getattr(_Parser, "CParser", None) or _PurePythonParser


class _BoundedLoader(Composer, SafeConstructor, Resolver, _Parser):  # type: ignore[misc]
    """PyYAML's safe loader with the composer first in line, so its bounded `compose_node` runs on the
    events of whichever parser is available."""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self._sizes: dict[int, tuple[int, int]] = {}
        """id(node) -> (expanded node count, expanded depth), for every node composed so far."""

    def compose_document(self) -> Node | None:
        self._sizes = {}
        document: Node | None = super().compose_document()
        return document

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event: Any = self.peek_event()
        self._depth += 1
        if self._depth > MAX_DEPTH:
            _refuse(f"nesting deeper than {MAX_DEPTH} levels", event)
        try:
            node: Node | None = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is None:
            return None
        if id(node) not in self._sizes:
            if isinstance(event, yaml.AliasEvent):
                # An anchor still being composed: the alias sits inside its own target.
                _refuse(f"alias *{event.anchor} refers to a node that contains it", event)
            self._sizes[id(node)] = self._measure(node)
        count, depth = self._sizes[id(node)]
        if count > MAX_NODES:
            _refuse(f"more than {MAX_NODES} nodes once aliases are expanded", event)
        if depth + self._depth > MAX_DEPTH:
            _refuse(f"nesting deeper than {MAX_DEPTH} levels once aliases are expanded", event)
        return node

    def _measure(self, node: Node) -> tuple[int, int]:
        if isinstance(node, SequenceNode):
            children: list[Node] = list(node.value)
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            return 1, 1
        sizes = [self._sizes[id(child)] for child in children]
        return 1 + sum(count for count, _ in sizes), 1 + max((depth for _, depth in sizes), default=0)

    def construct_yaml_int(self, node: ScalarNode) -> int:
        if len(node.value) > MAX_INT_DIGITS:
            _refuse(f"an integer of {len(node.value)} characters (at most {MAX_INT_DIGITS})", node)
        number: int = super().construct_yaml_int(node)
        return number


def _refuse(problem: str, where: Any) -> NoReturn:
    """Stop loading with a one-line problem at the position of `where` (an event or a node)."""
    raise yaml.MarkedYAMLError(problem=problem, problem_mark=getattr(where, "start_mark", None))


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def load_yaml_documents(text: str) -> Iterator[Any]:
    """Every document of a YAML stream, decoded like `yaml.safe_load_all` within the bounds above."""
    loader = _BoundedLoader(text)
    try:
        while loader.check_data():  # type: ignore[no-untyped-call]
            yield loader.get_data()
    finally:
        loader.dispose()


def one_line(error: yaml.YAMLError) -> str:
    """A PyYAML error without its multi-line excerpt and caret: the problem and where it is."""
    if not isinstance(error, yaml.MarkedYAMLError):
        return str(error).splitlines()[0] if str(error) else type(error).__name__
    mark = error.problem_mark or error.context_mark
    problem = error.problem or error.context or "malformed YAML"
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    context = f" ({error.context})" if error.context and error.problem else ""
    return f"{problem}{context}{where}"
