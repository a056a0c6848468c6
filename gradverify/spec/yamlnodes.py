"""Safe YAML loading that remembers where every key and value came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

KeyPath = tuple[str | int, ...]


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
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolve `<<: *anchor` merges as the safe loader does
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if key in mapping:
                raise DuplicateKeyError(
                    "while reading a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            # A key's own position is the most useful place to point at.
            positions[(*path, key)] = _position(key_node.start_mark)
            mapping[key] = _build(loader, value_node, (*path, key), positions)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(loader, item, (*path, index), positions) for index, item in enumerate(node.value)
        ]
    return loader.construct_object(node, deep=True)
