"""Conventions files read, validated and compiled: every mistake one line naming the file, the line and
the key path (`conventions.yaml:7: tools.0.match.span_name_pattern: …`), and any mistake stops the
whole load (nothing is recognised from half a file).

The YAML is read with bounds, as spec files are: a size limit, no anchors or aliases (a few lines of
them can stand for billions of nodes), and flow collections nested at most `_MAX_FLOW_DEPTH` deep."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collector.recognise.declared.errors import ConventionsError

if TYPE_CHECKING:
    import yaml

    from collector.recognise.declared._compiled import Declared

MAX_FILE_BYTES = 1024 * 1024
_MAX_FLOW_DEPTH = 50


def _node_lines(root: yaml.Node) -> dict[tuple[Any, ...], int]:
    """The line (1-based) of every key path in a composed document; aliases are refused."""
    import yaml

    lines: dict[tuple[Any, ...], int] = {(): root.start_mark.line + 1}
    seen: set[int] = set()
    stack: list[tuple[tuple[Any, ...], yaml.Node]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if id(node) in seen:  # the second path to one node: an alias
            raise ConventionsError(
                f"line {lines[path]}: anchors and aliases are not accepted: write the values out"
            )
        seen.add(id(node))
        children: list[tuple[tuple[Any, ...], yaml.Node]] = []
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                part = key.value if isinstance(key, yaml.ScalarNode) else str(key.start_mark.line)
                lines[(*path, part)] = key.start_mark.line + 1
                children.append(((*path, part), value))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                lines[(*path, index)] = item.start_mark.line + 1
                children.append(((*path, index), item))
        stack.extend(reversed(children))  # in the document's order: an alias is met after its anchor
    return lines


def _line(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int:
    """The line of the deepest part of `loc` the document has (a missing key: the mapping's line)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


def _compose(text: str, origin: str) -> yaml.Node | None:
    import yaml

    class _Bounded(yaml.SafeLoader):
        def fetch_flow_collection_start(self, token_class: Any) -> None:
            if self.flow_level >= _MAX_FLOW_DEPTH:
                raise yaml.YAMLError(f"[ and {{ nested more than {_MAX_FLOW_DEPTH} deep")
            super().fetch_flow_collection_start(token_class)

    try:
        loader = _Bounded(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{origin}:{mark.line + 1}" if mark is not None else origin
        raise ConventionsError(f"{where}: not valid YAML: {exc.problem or exc}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise ConventionsError(f"{origin}: not valid YAML: {' '.join(str(exc).split())}") from None
    return node


def _construct(node: yaml.Node) -> Any:
    import yaml

    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    from collector.recognise.declared import _model

    model: Any = _model.ConventionsFile
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = getattr(model, "model_fields", {}).get(part)
        annotation = field.annotation if field is not None else None
        found = [
            a
            for a in (getattr(annotation, "__args__", None) or (annotation,))
            for a in (getattr(a, "__args__", None) or (a,))
            if isinstance(a, type) and hasattr(a, "model_fields")
        ]
        model = found[0] if found else None
    return list(getattr(model, "model_fields", {}))


def _message(error: Any) -> str:
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        known = _known_keys(loc)
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"unknown key; {hint}known keys are {', '.join(known)}"
    return str(error["msg"]).removeprefix("Value error, ")


def _location(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(file)"


@dataclass(frozen=True, slots=True)
class _Validated:
    model: Any  # ConventionsFile (pydantic loads only with a file)
    lines: dict[tuple[Any, ...], int]


def _validated(origin: str, text: str, *, built_in: bool = False) -> _Validated:
    from pydantic import ValidationError

    from collector.recognise.declared._model import ConventionsFile

    node = _compose(text, origin)
    if node is None:
        raise ConventionsError(f"{origin}: holds no conventions: write tools: [ … ] (docs/conventions.md)")
    try:
        lines = _node_lines(node)
    except ConventionsError as exc:
        raise ConventionsError(f"{origin}:{exc}".replace(":line ", ":", 1)) from None
    data = _construct(node)
    if not isinstance(data, dict):
        raise ConventionsError(f"{origin}:{lines[()]}: a conventions file is a mapping with tools: [ … ]")
    try:
        return _Validated(ConventionsFile.model_validate(data, context={"built_in": built_in}), lines)
    except ValidationError as exc:
        found: list[tuple[tuple[Any, ...], str, str]] = []
        for error in exc.errors():
            loc = tuple(p for p in error["loc"] if not _union_tag(p))
            found.append((loc, error["type"], _message({**error, "loc": loc})))
        problems: list[str] = []
        for loc, message in _one_per_key(_useful(found)):
            problem = f"{origin}:{_line(lines, loc)}: {_location(loc)}: {message}"
            if problem not in problems:
                problems.append(problem)
        raise ConventionsError("; ".join(problems)) from None
    except RecursionError:
        raise ConventionsError(f"{origin}: nested too deeply") from None


# Pydantic names the member of a union it tried in an error's location (`Source`, `list[Source]`, `str`,
# `function-after[_one_place(), Source]`): not keys the user wrote.
_UNION_TAGS = frozenset({"Source", "Equals", "str", "bool", "int", "float"})


def _union_tag(part: Any) -> bool:
    return isinstance(part, str) and (part in _UNION_TAGS or part.startswith(("function-", "list[")))


# The type mismatches pydantic reports for each member of a union the value did not fit.
_MISMATCHES = frozenset({"list_type", "dict_type", "model_type", "model_attributes_type"})


def _useful(
    found: list[tuple[tuple[Any, ...], str, str]],
) -> list[tuple[tuple[Any, ...], str, str]]:
    """A value that fits no member of a union is reported once per member: a member's type mismatch
    ("Input should be a valid list") is dropped where another problem at or below the same key says
    what the user meant (an unknown key inside the mapping they wrote)."""

    def explained(loc: tuple[Any, ...]) -> bool:
        return any(kind not in _MISMATCHES and other[: len(loc)] == loc for other, kind, _ in found)

    return [item for item in found if item[1] not in _MISMATCHES or not explained(item[0])]


_SOURCE_KEYS = frozenset(
    {"tool_name", "arguments", "result", "error", "call_id", "paused", "agent_name", "run_id"}
)
_WHAT_FITS = {
    "attributes": "expected a text, a number, true or false, or {equals: VALUE, parser: json}",
    "source": "expected a source ({attribute: KEY, …} or {span_name: true}) or a list of them",
}


def _one_per_key(found: list[tuple[tuple[Any, ...], str, str]]) -> list[tuple[tuple[Any, ...], str]]:
    """One message per key: a value that fits no member of a union gets one line saying what fits."""
    by_loc: dict[tuple[Any, ...], list[tuple[str, str]]] = {}
    for loc, kind, message in found:
        by_loc.setdefault(loc, []).append((kind, message))
    result = []
    for loc, items in by_loc.items():
        if len(items) > 1 and all(kind.endswith("_type") for kind, _ in items):
            if len(loc) >= 2 and loc[-2] == "attributes":
                result.append((loc, _WHAT_FITS["attributes"]))
                continue
            if loc and loc[-1] in _SOURCE_KEYS:
                result.append((loc, _WHAT_FITS["source"]))
                continue
        result.extend((loc, message) for _, message in items)
    return result


def read_file(path: Path) -> tuple[str, str]:
    """A conventions file's text, bounded; (origin, text)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConventionsError(f"{path}: {size} bytes is too large for a conventions file (limit 1 MiB)")
        return str(path), path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConventionsError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConventionsError(f"{path}: a directory: give the conventions file itself") from None
    except UnicodeDecodeError as exc:
        raise ConventionsError(f"{path}: not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise ConventionsError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def compile_sources(sources: list[tuple[str, str]], *, built_in: bool = False) -> Declared:
    """Conventions from (origin, text) pairs: validated, names unique across them, compiled. `built_in`:
    tracescore's own files, which may use the built-in conventions' names."""
    from collector.recognise.declared._compiled import compile_file

    files = [(origin, text, _validated(origin, text, built_in=built_in)) for origin, text in sources]
    first: dict[str, str] = {}
    for origin, _, validated in files:
        for kind in ("tools", "agents"):
            for index, convention in enumerate(getattr(validated.model, kind)):
                line = validated.lines.get((kind, index, "name"), 1)
                if convention.name in first:
                    raise ConventionsError(
                        f"{origin}:{line}: {kind}.{index}.name: convention {convention.name!r} is named "
                        f"already ({first[convention.name]}); give each convention its own name"
                    )
                first[convention.name] = f"{origin}:{line}"
    return compile_file([(origin, text, validated.model) for origin, text, validated in files])


def load_conventions(paths: list[Path]) -> Declared:
    """The conventions of these files; any mistake in any of them stops the load."""
    return compile_sources([read_file(p) for p in paths])


BUILT_IN_FILES = ("vercel_ai.yaml",)


def built_in_conventions(name: str) -> Declared:
    """One of the built-in conventions written as a conventions file, shipped beside this module (the
    Python adapter stays on the ingest path: a server given no file loads no pydantic, YAML or RE2)."""
    if name not in BUILT_IN_FILES:
        raise ConventionsError(f"{name}: no such built-in conventions file ({', '.join(BUILT_IN_FILES)})")
    return compile_sources([read_file(Path(__file__).with_name(name))], built_in=True)
