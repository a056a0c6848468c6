"""Safe YAML loading that remembers where every key and value came from.

Reading is capped (gradverify.spec.limits): the composer counts nodes and depth as it builds
them, and the walk that turns nodes into Python values counts every node again each time an
alias or a merge key brings it in, so an alias bomb or a deep nest stops at its cap with the
line it reached.

The caps are gradverify's own and answer first whatever PyYAML does: merge keys are resolved
here, not by PyYAML (whose merging changed within 6.0.x), and a flow nest deep enough for
libyaml's own nesting limit to fire is cut at gradverify's cap before it is parsed. So the
message and its line are the same with old or new PyYAML, with libyaml or in pure Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent

from gradverify.spec import limits
from gradverify.spec.limits import Limit

try:  # libyaml's event parser: same events and marks, about five times faster
    from yaml import CSafeLoader as FastLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as FastLoader  # type: ignore[assignment]

BASE_LOADERS: tuple[type[Any], ...] = (FastLoader, yaml.SafeLoader)
"""The readers load_yaml can parse with: libyaml's where PyYAML has it, and pure Python."""

KeyPath = tuple[str | int, ...]

_MAPPING_TAG = "tag:yaml.org,2002:map"
_SEQUENCE_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based


@dataclass(frozen=True)
class LoadedYaml:
    data: Any
    positions: dict[KeyPath, Position]

    def position_of(self, path: KeyPath) -> Position | None:
        """The position of `path`, or of its closest ancestor that has one."""
        for end in range(len(path), -1, -1):
            found = self.positions.get(path[:end])
            if found is not None:
                return found
        return None


class DuplicateKeyError(yaml.MarkedYAMLError):
    pass


class LimitError(yaml.MarkedYAMLError):
    """A document past one of the caps in gradverify.spec.limits."""

    # `mark` is a yaml.Mark, or libyaml's own Mark class with the same fields.
    def __init__(self, limit: Limit, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.limit = limit


def _position(mark: yaml.Mark) -> Position:
    return Position(line=mark.line + 1, column=mark.column + 1)


def load_yaml(text: str, base: type[Any] = FastLoader) -> LoadedYaml:
    """Parse one YAML document with the safe loader; raise yaml.YAMLError on bad input.

    `base` is one of BASE_LOADERS: each answers a capped document with the same LimitError.
    """
    if len(text) > limits.MAX_SPEC_BYTES:
        raise LimitError(limits.SIZE, "the spec is too large", None)
    cut = _past_flow_depth(text)
    if cut is not None:
        # Parsed whole, such a nest meets a scanner before the composer: libyaml's own limit
        # (1,000 levels) or pure Python's look-ahead over every bracket (seconds). Up to the
        # bracket past the cap, the composer's depth cap answers at once. Should the count have
        # been fooled (brackets inside a plain value), the cut text raises no cap and the whole
        # text is parsed as usual.
        try:
            _parse(text[:cut], base)
        except LimitError:
            raise
        except yaml.YAMLError:
            pass
    return _parse(text, base)


_FLOW_SYNTAX = re.compile(r"""[\[\]{}'"#\n]""")


def _past_flow_depth(text: str) -> int | None:
    """The end of the bracket that opens flow level MAX_DEPTH + 1, if any does.

    A count of brackets outside quotes and comments: it can only overestimate (a bracket
    inside a plain value counts), which load_yaml's trial parse of the cut text tolerates.
    """
    if text.count("[") + text.count("{") <= limits.MAX_DEPTH:
        return None
    depth = 0
    position = 0
    while (found := _FLOW_SYNTAX.search(text, position)) is not None:
        char, position = found.group(), found.end()
        if char in "[{":
            depth += 1
            if depth > limits.MAX_DEPTH:
                return position
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif char == "#" and (found.start() == 0 or text[found.start() - 1] in " \t\n"):
            position = _line_end(text, position)
        elif char in "'\"" and (found.start() == 0 or text[found.start() - 1] in " \t\n[{,:"):
            position = _quote_end(text, position, char)
    return None


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end < 0 else end


def _quote_end(text: str, position: int, quote: str) -> int:
    """Just past the quote closing a scalar opened before `position` ('' and \\" escape)."""
    while True:
        end = text.find(quote, position)
        if end < 0:
            return len(text)
        if quote == '"' and _escaped(text, end):
            position = end + 1
        elif quote == "'" and text.startswith("''", end):
            position = end + 2
        else:
            return end + 1


def _escaped(text: str, index: int) -> bool:
    """Whether the character at `index` follows an odd run of backslashes."""
    start = index
    while start > 0 and text[start - 1] == "\\":
        start -= 1
    return (index - start) % 2 == 1


def _parse(text: str, base: type[Any]) -> LoadedYaml:
    loader = _CAPPED[base](text)
    try:
        root = loader.get_single_node()  # type: ignore[misc]
        positions: dict[KeyPath, Position] = {}
        data = None if root is None else _build(loader, root, (), positions)
    except RecursionError:
        # The caps keep recursion far below Python's limit; this is the last fence.
        raise LimitError(limits.DEPTH, "nested too deeply", None) from None
    finally:
        loader.dispose()
    return LoadedYaml(data=data, positions=positions)


class _CappedLoader:
    """Mixed into a safe loader: composes in Python so that nodes and depth can be counted."""

    # With libyaml these would be C methods that cannot be capped; PyYAML's own Python
    # composer runs on libyaml's events just as well.
    get_single_node = Composer.get_single_node
    compose_document = Composer.compose_document
    compose_sequence_node = Composer.compose_sequence_node
    compose_mapping_node = Composer.compose_mapping_node

    # Provided by the safe loader this is mixed into.
    check_event: Any
    peek_event: Any
    construct_object: Any
    dispose: Any

    def __init__(self, text: str) -> None:
        super().__init__(text)  # type: ignore[call-arg]
        self.anchors: dict[Any, yaml.Node] = {}
        self.composed = 0  # nodes written in the document
        self.expanded = 0  # nodes visited while building values, aliases counted each time
        self.depth = 0
        self.merged: dict[yaml.MappingNode, list[tuple[yaml.Node, yaml.Node]]] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if not self.check_event(AliasEvent):
            event: Any = self.peek_event()
            self.composed += 1
            if self.composed > limits.MAX_NODES:
                raise LimitError(limits.NODES, "too many nodes", event.start_mark)
            if self.depth >= limits.MAX_DEPTH:
                raise LimitError(limits.DEPTH, "nested too deeply", event.start_mark)
        self.depth += 1
        try:
            node: Any = Composer.compose_node(self, parent, index)  # type: ignore[arg-type]
            return node
        finally:
            self.depth -= 1

    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        event: Any = self.peek_event()
        if len(event.value) > limits.MAX_SCALAR_CHARS:
            raise LimitError(limits.SCALAR, "a value is too long", event.start_mark)
        return Composer.compose_scalar_node(self, anchor)  # type: ignore[arg-type]

    def count(self, node: yaml.Node) -> None:
        """Count one more node built; an alias bomb stops here."""
        self.expanded += 1
        if self.expanded > limits.MAX_NODES:
            raise LimitError(limits.ALIASES, "aliases expand to too many nodes", node.start_mark)

    def merged_pairs(self, node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node]]:
        """The key-value pairs of `node` with its `<<` merge keys resolved.

        Merged pairs come first, the first source last, then the mapping's own: read in order
        with the last pair of a key winning, that is YAML's precedence (a key written in the
        mapping over merged ones, an earlier source over a later one). Each use of a source
        counts its pairs again, so `<<: [*a, *a, ...]` chains stop at the cap like aliases.
        """
        if node in self.merged:
            return self.merged[node]
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        own: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                own.append((key_node, value_node))
                continue
            for source in reversed(_merge_sources(node, value_node)):
                pairs = self.merged_pairs(source)
                self.expanded += len(pairs)
                if self.expanded > limits.MAX_NODES:
                    problem = "merge keys expand to too many nodes"
                    raise LimitError(limits.ALIASES, problem, node.start_mark)
                merged.extend(pairs)
        self.merged[node] = merged + own
        return self.merged[node]


_CAPPED: dict[type[Any], type[_CappedLoader]] = {
    base: type(f"Capped{base.__name__}", (_CappedLoader, base), {}) for base in BASE_LOADERS
}


def _merge_sources(node: yaml.MappingNode, value_node: yaml.Node) -> list[yaml.MappingNode]:
    """The mappings a `<<` key merges: one mapping, or a list of them."""
    written = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
    sources: list[yaml.MappingNode] = []
    for source in written:
        if not (isinstance(source, yaml.MappingNode) and source.tag == _MAPPING_TAG):
            found = "a list" if isinstance(source, yaml.SequenceNode) else "a plain value"
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"a merge key (<<) takes a mapping or a list of mappings, found {found}",
                source.start_mark,
            )
        sources.append(source)
    return sources


def _build(
    loader: _CappedLoader, node: yaml.Node, path: KeyPath, positions: dict[KeyPath, Position]
) -> Any:
    loader.count(node)
    if len(path) >= limits.MAX_DEPTH:
        # Each anchor is within the cap where it is written, but aliases nest anchors in
        # anchors (or an anchor in itself: `&a [*a]`).
        raise LimitError(limits.DEPTH, "aliases nest too deeply", node.start_mark)
    positions.setdefault(path, _position(node.start_mark))
    if isinstance(node, yaml.MappingNode) and node.tag == _MAPPING_TAG:
        _reject_duplicate_keys(loader, node)
        winners: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in loader.merged_pairs(node):
            winners[_key(loader, key_node)] = (key_node, value_node)
        mapping: dict[Any, Any] = {}
        for key, (key_node, value_node) in winners.items():
            # A key's own position is the most useful place to point at.
            positions[(*path, key)] = _position(key_node.start_mark)
            mapping[key] = _build(loader, value_node, (*path, key), positions)
        return mapping
    if isinstance(node, yaml.SequenceNode) and node.tag == _SEQUENCE_TAG:
        return [
            _build(loader, item, (*path, index), positions) for index, item in enumerate(node.value)
        ]
    # Scalars, and collections with an explicit tag (`!!set`, `!!python/...`): the safe
    # constructor builds what it knows and raises ConstructorError on anything else.
    _count_within(loader, node)
    return _construct(loader, node)


def _count_within(loader: _CappedLoader, node: yaml.Node) -> None:
    """Count the nodes under a tagged collection, which the constructor builds on its own."""
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            loader.count(item)
            _count_within(loader, item)
    elif isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            for child in (key_node, value_node):
                loader.count(child)
                _count_within(loader, child)


def _construct(loader: _CappedLoader, node: yaml.Node) -> Any:
    """The value of `node`; a scalar the safe constructor chokes on is a YAML error here."""
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, TypeError, OverflowError) as exc:
        # e.g. `2024-13-01` (a timestamp with month 13) or an integer of 5,000 digits
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot read this value as {node.tag}: {exc}", node.start_mark
        ) from None


def _key(loader: _CappedLoader, key_node: yaml.Node) -> Any:
    """A mapping key: a plain value (a list or mapping as a key cannot name anything)."""
    if not isinstance(key_node, yaml.ScalarNode):
        kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
        raise yaml.constructor.ConstructorError(
            None, None, f"a key must be a plain value, found a {kind}", key_node.start_mark
        )
    return _construct(loader, key_node)


def _reject_duplicate_keys(loader: _CappedLoader, node: yaml.MappingNode) -> None:
    """Raise on a key written twice in one mapping (keys brought in by `<<` may repeat)."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = _key(loader, key_node)
        if key in seen:
            raise DuplicateKeyError(
                "while reading a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        seen.add(key)
