"""The documents of a spec file, read with bounds: YAML that would cost far more to load than any spec
needs (alias bombs, deeply nested flow collections, huge files) is refused with a message, not loaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

_MAX_SPEC_FILE_BYTES = 4 * 1024 * 1024


class DocumentError(ValueError):
    """A spec file that cannot be read as YAML or JSON; the message names the file and the fix."""


# YAML aliases may add this many nodes beyond those written: a few lines of anchors can otherwise stand
# for billions of nodes, which validation and the canonical JSON would walk one by one.
_MAX_ALIAS_EXPANSION = 100_000
_MAX_FLOW_DEPTH = 100


class _Refused(yaml.YAMLError):
    """Valid YAML that would cost far more to load than any spec needs."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Count the nodes a document expands to (each alias counted in full), without expanding it."""
    sizes: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack[-1]
        if id(node) in sizes:
            stack.pop()
            continue
        pending = [c for c in _children(node) if id(c) not in sizes]
        if id(node) not in entered:
            entered.add(id(node))
            if any(id(c) in entered for c in pending):
                raise _Refused("an alias refers to a node that contains it (a structure without end)")
            stack.extend(pending)
            continue
        stack.pop()
        sizes[id(node)] = 1 + sum(sizes[id(c)] for c in _children(node))
    written = len(sizes)
    if sizes[id(root)] - written > _MAX_ALIAS_EXPANSION:
        raise _Refused(
            f"its aliases expand {written} nodes to {sizes[id(root)]} (at most {_MAX_ALIAS_EXPANSION} "
            "more are accepted); write the values out or use fewer aliases"
        )


class _BoundedLoader(yaml.SafeLoader):
    # PyYAML scans nested flow collections ([[[…, {{{…) in quadratic time: seconds for a 20 kB file.
    def fetch_flow_collection_start(self, token_class: Any) -> None:
        if self.flow_level >= _MAX_FLOW_DEPTH:
            raise _Refused(f"[ and {{ nested more than {_MAX_FLOW_DEPTH} deep")
        super().fetch_flow_collection_start(token_class)

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node)
        return super().construct_document(node)


def documents(path: Path) -> list[Any]:
    size = path.stat().st_size
    if size > _MAX_SPEC_FILE_BYTES:
        raise DocumentError(f"{path}: {size} bytes is too large for a spec file (limit 4 MiB)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{path}: not UTF-8 text: {exc}") from exc
    return text_documents(text, str(path), as_json=path.suffix.lower() == ".json")


def text_documents(text: str, origin: str, *, as_json: bool = False) -> list[Any]:
    """The documents of spec text that did not come from a file (a YAML string in a test); `origin`
    names it in messages. Bounded as files are."""
    if len(text.encode()) > _MAX_SPEC_FILE_BYTES:
        raise DocumentError(f"{origin}: too large for a spec (limit 4 MiB)")
    try:
        if as_json:
            return [json.loads(text)]
        return [doc for doc in yaml.load_all(text, Loader=_BoundedLoader) if doc is not None]
    except _Refused as exc:
        raise DocumentError(f"{origin}: refused: {exc}") from exc
    except (json.JSONDecodeError, yaml.YAMLError, RecursionError) as exc:
        kind = "JSON" if as_json else "YAML"
        raise DocumentError(f"{origin}: not valid {kind}: {_one_line(exc)}") from exc


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _one_line(exc: BaseException) -> str:
    """The parser's complaint on one line: PyYAML's own message spans several, quoting the source."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem and exc.problem_mark is not None:
        text = f"{exc.problem} at {_at(exc.problem_mark)}"
        if exc.context and exc.context_mark is not None:
            text += f" ({exc.context} at {_at(exc.context_mark)})"
        return text
    return " ".join(str(exc).split())
