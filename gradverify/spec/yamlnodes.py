"""Safe YAML loading that remembers where every key and value came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

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


def _position(mark: yaml.Mark) -> Position:
    return Position(line=mark.line + 1, column=mark.column + 1)


def load_yaml(text: str) -> LoadedYaml:
    """Parse one YAML document with the safe loader; raise yaml.YAMLError on bad input."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        positions: dict[KeyPath, Position] = {}
        data = None if root is None else _build(loader, root, (), positions)
    finally:
        loader.dispose()
    return LoadedYaml(data=data, positions=positions)


def _build(
    loader: yaml.SafeLoader, node: yaml.Node, path: KeyPath, positions: dict[KeyPath, Position]
) -> Any:
    positions.setdefault(path, _position(node.start_mark))
    if isinstance(node, yaml.MappingNode) and node.tag == _MAPPING_TAG:
        _reject_duplicate_keys(loader, node)
        loader.flatten_mapping(node)  # resolve `<<: *anchor` merges as the safe loader does
        # After flattening, merged keys come first; a key written in the mapping itself wins.
        winners: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            winners[loader.construct_object(key_node, deep=True)] = (key_node, value_node)
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
    return loader.construct_object(node, deep=True)


def _reject_duplicate_keys(loader: yaml.SafeLoader, node: yaml.MappingNode) -> None:
    """Raise on a key written twice in one mapping (keys brought in by `<<` may repeat)."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise DuplicateKeyError(
                "while reading a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        seen.add(key)
