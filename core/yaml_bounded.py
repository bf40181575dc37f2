"""YAML for files people and agents write: safe, no timestamps, no duplicate keys, and bounded.

Aliases make YAML a compression format: a 455-byte "billion laughs" file names 10^9 nodes, and whatever
walks the loaded value (validation, hashing, saving) walks all of them. Here the document's node graph is
measured, each alias counted at its full expanded size, before any Python value is built: aliases that add
more than MAX_ALIAS_NODES values, or an alias that contains itself, are refused. Apart from aliases, a
document may hold up to MAX_NODES values as written (a template of 20,000 steps of 50 values each). Nesting
past what the parser can follow (thousands of levels) is refused too, with one line instead of a traceback.
"""

from __future__ import annotations

import json
from typing import Any, Final

import yaml

from toolreel.core.errors import TemplateError

__all__ = ["MAX_ALIAS_NODES", "MAX_NODES", "load_yaml"]

MAX_NODES: Final = 1_000_000  # values as written: 20,000 steps of 50 values each
MAX_ALIAS_NODES: Final = 100_000  # values aliases may add once expanded; a "billion laughs" adds 10^9


# libyaml's parser when PyYAML has it: a 20,000-step template is parsed in seconds, not a minute
_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[valid-type, misc]  # a base chosen at import: mypy sees the pure one
    """Safe YAML without timestamps (dates stay strings: templates are JSON) and without duplicate keys."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (the second one would silently win)", mark
            )
        seen[key] = loader.construct_object(value_node, deep=True)
    return seen


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(text: str, where: str) -> Any:
    """The value of a YAML (or JSON) document; TemplateError naming `where` (and line:column) if it is
    not YAML, too large once aliases are expanded, or nested too deeply."""
    if text.lstrip().startswith("{"):
        found = _load_json(text, where)
        if found is not _NOT_JSON:
            return found
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node, where)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        position = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise TemplateError(f"{where}{position}: YAML error: {problem}") from None
    except yaml.YAMLError as exc:
        raise TemplateError(f"{where}: YAML error: {exc}") from None
    except RecursionError:
        raise TemplateError(f"{where}: YAML error: nested too deeply (thousands of levels)") from None
    finally:
        loader.dispose()


_NOT_JSON: Final = object()


def _load_json(text: str, where: str) -> Any:
    """A JSON document read as JSON, many times faster than as YAML (which it also is): no aliases to
    expand; duplicate keys and the size limit as for YAML. `_NOT_JSON` when it does not parse (YAML then
    says where it is wrong)."""
    count = 0

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal count
        count += len(items) + 1
        if count > MAX_NODES:
            raise TemplateError(f"{where}: more than {MAX_NODES:,} values, the most a template or inputs file may hold")
        made: dict[str, Any] = {}
        for key, value in items:
            if key in made:
                raise TemplateError(f"{where}: YAML error: duplicate key {key!r} (the second one would silently win)")
            made[key] = value
        return made

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: YAML reads them as it does


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_size(root: yaml.Node, where: str) -> None:
    """Count nodes as if every alias were a copy (memoized per node: linear in the text)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            # the distinct nodes measured so far include this one's own: past them, the size is aliases'
            if sizes[key] > len(sizes) + MAX_ALIAS_NODES:
                raise TemplateError(
                    f"{where}:{node.start_mark.line + 1}:{node.start_mark.column + 1}: YAML error: more than "
                    f"{MAX_ALIAS_NODES:,} values once its aliases are expanded (an alias bomb?)"
                )
            if len(sizes) > MAX_NODES:
                raise TemplateError(
                    f"{where}:{node.start_mark.line + 1}: more than {MAX_NODES:,} values, the most a template "
                    "or inputs file may hold; split it (a template step can run another template)"
                )
            continue
        if key in sizes:
            continue
        if key in active:
            mark = node.start_mark
            raise TemplateError(f"{where}:{mark.line + 1}:{mark.column + 1}: YAML error: an alias that contains itself")
        active.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
