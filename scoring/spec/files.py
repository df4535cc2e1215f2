"""Spec files and folders read into validated specs: every problem a message that names the file, the spec
and the fix; any problem stops the whole load (nothing is scored from half a set)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scoring.spec._documents import DocumentError, documents, text_documents
from scoring.spec._messages import location, unknown_key
from scoring.spec.errors import SpecError
from scoring.spec.specs import Spec

log = logging.getLogger("tracescore.specs")

VACUOUS_WARNING = (
    "this spec checks nothing: under profile reliability_eval every run it selects passes, as Agno's "
    "ReliabilityEval does with no expected_tool_calls; add expected_tools (expected_tools: [] lets no "
    "tool run) or arguments"
)


def _spec(path: Path, index: int, raw: Any) -> Spec:
    label = f"spec #{index + 1}"
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        label = f"spec {raw['name']!r}"
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: {label}: a spec must be a mapping of keys (name, expected_tools, …)")
    try:
        spec = Spec.model_validate(raw)
        # Every verdict carries the fingerprint: a spec whose canonical JSON cannot be made (pydantic
        # refuses to serialize very deep values) is refused here, not at its first verdict.
        _ = spec.fingerprint
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            message = str(error["msg"]).removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = unknown_key(Spec, error["loc"])
            problems.append(f"{location(error)}: {message}")
        raise SpecError(f"{path}: {label}: " + "; ".join(problems)) from exc
    except (RecursionError, ValueError) as exc:
        raise SpecError(f"{path}: {label}: nested too deeply") from exc
    if spec.checks_nothing:
        log.warning("%s: %s: %s", path, label, VACUOUS_WARNING)
    return spec


def load_spec_file(path: Path) -> list[Spec]:
    try:
        found = documents(path)
    except DocumentError as exc:
        raise SpecError(str(exc)) from exc
    return _specs_of(path, found)


def _specs_of(origin: Path, found: list[Any]) -> list[Spec]:
    specs: list[Spec] = []
    for document in found:
        items = document if isinstance(document, list) else [document]
        specs.extend(_spec(origin, len(specs), item) for item in items)
    if not specs:
        raise SpecError(f"{origin}: holds no spec")
    return specs


def load_spec_text(text: str, origin: str = "<spec text>") -> list[Spec]:
    """The specs of YAML (or JSON, which is YAML) text, validated as a file's are; `origin` names the
    text in messages (the Python API and the pytest plugin take specs as strings)."""
    try:
        found = text_documents(text, origin)
    except DocumentError as exc:
        raise SpecError(str(exc)) from exc
    return _specs_of(Path(origin), found)


def load_spec_data(data: dict[str, Any] | list[Any], origin: str = "<spec data>") -> list[Spec]:
    """The specs of an already parsed document: one spec as a mapping, or a list of them."""
    return _specs_of(Path(origin), [data])


_SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def _spec_files(directory: Path) -> list[Path]:
    """The spec files under a directory, hidden ones and those in hidden folders left out: a Kubernetes
    ConfigMap volume holds each file twice, as `name.yaml` (a link) and in its `..<time>/` folder of
    the moment (the files were once read twice, and every spec refused as a duplicate), and editors
    write their temporary copies under names that begin with a dot."""
    return sorted(
        p
        for p in directory.rglob("*")
        if p.suffix.lower() in _SPEC_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(directory).parts)
        and p.is_file()
    )


def spec_files(path: Path) -> list[Path]:
    """The spec files `path` names: itself, or every .yaml, .yml and .json file under a directory
    (hidden ones left out, see `_spec_files`)."""
    if path.is_dir():
        files = _spec_files(path)
        if not files:
            raise SpecError(f"{path}: directory holds no .yaml, .yml or .json spec file")
        return files
    if path.exists():
        return [path]
    raise SpecError(f"{path}: no such file or directory")


def load_specs(paths: list[Path]) -> list[Spec]:
    """Every spec from these files and directories; any problem stops everything (nothing is scored)."""
    specs: list[Spec] = []
    origins: dict[str, list[Path]] = {}
    for path in paths:
        for file in spec_files(path):
            for spec in load_spec_file(file):
                specs.append(spec)
                origins.setdefault(spec.name, []).append(file)
    duplicates = [
        f"spec {name!r} in {', '.join(str(f) for f in where)}"
        for name, where in sorted(origins.items())
        if len(where) > 1
    ]
    if duplicates:
        raise SpecError(
            f"{'; '.join(duplicates)}: the name is used more than once; give each spec a unique name"
        )
    return specs
