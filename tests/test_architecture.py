"""The tree tells the architecture (docs/architecture.md), and these tests keep it telling the truth.

Each of `collector/` and `scoring/` is cut into stage packages. A stage may import only from stages
below it, and from another stage only its public modules (no leading underscore); no module imports
itself back through a chain of others; a module past 400 lines says at its top why it is long; each
stage's `__init__.py` says what it owns and names its public modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Lowest first: a stage may import only from stages earlier in this list (the `api` package is the
# generated gRPC code, which only the serve stage uses). Every collector stage may use scoring.
LAYERS = {
    "collector": [
        "model",
        "recognise",
        "store",
        "decode",
        "clickhouse",
        "testing",
        "receive",
        "api",
        "serve",
        "cli",
    ],
    "scoring": ["evidence", "verdict", "spec", "checks", "judge", "batch", "report"],
}
# Stages on one level know nothing of each other.
SAME_LEVEL = {("scoring", "evidence"): 0, ("scoring", "verdict"): 0, ("scoring", "batch"): 5}
MAX_LINES = 400
LONG_REASON = "Why this module is long:"


def _level(top: str, stage: str) -> int:
    return SAME_LEVEL.get((top, stage), LAYERS[top].index(stage))


def _modules() -> dict[str, Path]:
    found = {}
    for top in LAYERS:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "_pb2" in path.name:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> Iterator[str]:
    """Every project module `module` imports, wherever the import stands (lazy ones included)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: counted from the importing module's package
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base])
            base = base.strip(".")
            # `from package import module` depends on the module; `from module import name`, on the module
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        yield from (name for name in names if name in MODULES and name != module)


GRAPH = {module: sorted(set(_imports(module, path))) for module, path in MODULES.items()}


def _stage(module: str) -> tuple[str, str | None]:
    parts = module.split(".")
    return parts[0], parts[1] if len(parts) > 1 else None


def test_every_module_belongs_to_a_stage() -> None:
    loose = [m for m in MODULES if m.count(".") == 1 and m.split(".")[1] not in LAYERS[m.split(".")[0]]]
    assert loose == [], f"modules outside every stage package: {loose}"


def test_stages_import_only_downwards_and_only_public_modules() -> None:
    problems = []
    for module, imported in GRAPH.items():
        top, stage = _stage(module)
        for target in imported:
            target_top, target_stage = _stage(target)
            if stage is None:  # collector/__init__.py and scoring/__init__.py: the users' surface
                continue
            if top == "scoring" and target_top == "collector":
                problems.append(f"{module} -> {target}: scoring never reads the collector's code")
                continue
            if target_top != top:
                continue  # the collector uses scoring; which parts is scoring's surface to decide
            if target_stage == stage:
                continue
            if target_stage is None:
                problems.append(f"{module} -> {target}: a stage imports the stage it needs, not the top")
            elif _level(top, target_stage) >= _level(top, stage):
                problems.append(f"{module} -> {target}: {stage} may not import from {target_stage}")
            elif target.rpartition(".")[2].startswith("_"):
                problems.append(f"{module} -> {target}: a private module of another stage")
    assert problems == [], "\n".join(problems)


def test_the_collector_reaches_scoring_only_through_public_modules() -> None:
    problems = [
        f"{module} -> {target}"
        for module, imported in GRAPH.items()
        if module.startswith("collector")
        for target in imported
        if target.startswith("scoring.") and target.rpartition(".")[2].startswith("_")
    ]
    assert problems == [], "\n".join(problems)


def _cycle() -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in GRAPH[module]:
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in GRAPH:
        if module not in state and (found := visit(module)):
            return found
    return None


def test_no_import_cycles() -> None:
    # Every import counts, lazy ones and those only for type checking too: a cycle hidden inside a
    # function is still two modules that cannot be understood one without the other.
    cycle = _cycle()
    assert cycle is None, " -> ".join(cycle or [])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_long_module_says_why(module: str) -> None:
    path = MODULES[module]
    lines = path.read_text().count("\n")
    if lines <= MAX_LINES:
        return
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert LONG_REASON in docstring, (
        f"{path.relative_to(ROOT)} has {lines} lines: split it, or say at its top '{LONG_REASON} …'"
    )


STAGES = [f"{top}.{stage}" for top, stages in LAYERS.items() for stage in stages if stage != "api"]


@pytest.mark.parametrize("package", STAGES)
def test_each_stage_says_what_it_owns_and_names_its_public_modules(package: str) -> None:
    init = MODULES[package]
    docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
    for heading in ("Owns:", "Takes in:", "Hands on:", "Public:"):
        assert heading in docstring, f"{init.relative_to(ROOT)}: its docstring has no '{heading}'"
    public = sorted(
        m.rpartition(".")[2]
        for m in MODULES
        if m.startswith(package + ".") and not m.rpartition(".")[2].startswith("_")
    )
    public_part = docstring.split("Public:", 1)[1]
    missing = [name for name in public if f"`{name}`" not in public_part]
    assert missing == [], f"{init.relative_to(ROOT)}: name the public modules {missing} under 'Public:'"


def test_the_architecture_page_names_every_stage() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    missing = [package for package in STAGES if f"{package.replace('.', '/')}/" not in page]
    assert missing == [], f"docs/architecture.md does not name {missing}"
