"""The coverage matrix: each cell is one framework driven through one instrumentation.

A cell names its driver (tests/frameworks/drivers/), the driver's arguments, and the requirements file
(tests/frameworks/requirements/, every version pinned) of the virtualenv it runs in. Several cells share
a virtualenv when their pins agree. `python -m tests.frameworks.record` builds the virtualenvs and
records each cell's OTLP into tests/frameworks/fixtures/<cell>/ (`make fixtures`);
tests/frameworks/test_recorded.py checks recognition on those recordings in the normal suite, and
tests/frameworks/test_live.py runs the drivers themselves (`make test-frameworks`, run by .ci/run).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DRIVERS = HERE / "drivers"
REQUIREMENTS = HERE / "requirements"
NODE = HERE / "node"
FIXTURES = HERE / "fixtures"


@dataclass(frozen=True)
class Cell:
    name: str
    driver: str
    args: tuple[str, ...]
    requirements: str
    # What tracescore still reads wrong from this cell, said precisely: its tests are expected to fail
    # (strictly: a cell that starts passing must lose its gap), and docs/integrations.md shows it.
    known_gap: str | None = None
    # `node`: the driver is a Node.js module of tests/frameworks/node/ (package-lock.json pins it), and
    # `requirements` is unused.
    runtime: str = "python"

    @property
    def fixture(self) -> Path:
        return FIXTURES / self.name


CELLS: tuple[Cell, ...] = (
    *(
        Cell(
            f"langgraph-{shape}-openinference",
            "drive_langgraph.py",
            ("--shape", shape),
            "langchain-openinference",
        )
        for shape in ("react", "stategraph", "create_agent")
    ),
    # The delegation scenario (tests/frameworks/drivers/_harness.py): a leader agent and a member agent.
    *(
        Cell(
            f"langgraph-multiagent-{instrumentation}",
            "drive_langgraph.py",
            ("--scenario", "delegation", "--instrumentation", instrumentation),
            f"langchain-{instrumentation}",
        )
        for instrumentation in ("openinference", "openllmetry")
    ),
    *(
        Cell(
            f"langgraph-multiagent-subgraph-{instrumentation}",
            "drive_langgraph.py",
            ("--scenario", "delegation", "--delegation", "subgraph", "--instrumentation", instrumentation),
            f"langchain-{instrumentation}",
        )
        for instrumentation in ("openinference", "openllmetry")
    ),
    Cell("smolagents-openinference", "drive_smolagents.py", (), "smolagents-openinference"),
    Cell(
        "smolagents-multiagent-openinference",
        "drive_smolagents.py",
        ("--scenario", "delegation"),
        "smolagents-openinference",
    ),
    Cell("llamaindex-openinference", "drive_llamaindex.py", (), "llamaindex-openinference"),
    Cell(
        "llamaindex-multiagent-openinference",
        "drive_llamaindex.py",
        ("--scenario", "delegation"),
        "llamaindex-openinference",
        known_gap=(
            "openinference-instrumentation-llama-index 4.6.1 records an `AgentWorkflow` as one CHAIN "
            "`AgentWorkflow.run` (no agent named) whose steps are all its children, siblings: no span "
            "attribute names an agent; which agent runs a step is only text inside the Python repr of the "
            "event in the `setup_agent`/`run_agent_step` spans' `input.value` "
            "(`current_agent_name='weather_agent'`), and a tool's `FunctionTool.acall` span (under "
            "`AgentWorkflow.call_tool`) is tied to the step that asked for it only by the call id inside "
            "those reprs (the step's `output.value` repr is cut short), so every execution is stored under "
            "`AgentWorkflow`, the member's `get_weather` too, which `scope: leader` then counts"
        ),
    ),
    Cell(
        "llamaindex-nostream-openinference",
        "drive_llamaindex.py",
        ("--no-streaming",),
        "llamaindex-openinference",
    ),
    Cell("dspy-openinference", "drive_dspy.py", ("--call", "sync"), "dspy-openinference"),
    Cell("dspy-async-openinference", "drive_dspy.py", ("--call", "async"), "dspy-openinference"),
    *(
        Cell(f"adk-native-{mode}", "drive_adk.py", ("--mode", mode), "adk")
        for mode in ("v2", "v2-content", "v1", "v1-nocontent", "v1-experimental")
    ),
    *(
        Cell(
            f"adk-multiagent-native-{mode}",
            "drive_adk.py",
            ("--scenario", "delegation", "--mode", mode),
            "adk",
        )
        for mode in ("v2-content", "v1")
    ),
    Cell(
        "adk-multiagent-openinference-global",
        "drive_adk.py",
        ("--scenario", "delegation", "--instrumentation", "openinference", "--global-provider"),
        "adk",
    ),
    *(
        Cell(
            f"adk-multiagent-transfer-{name}",
            "drive_adk.py",
            ("--scenario", "delegation", "--delegation", "transfer", *args),
            "adk",
        )
        for name, args in (
            ("native-v2-content", ("--mode", "v2-content")),
            ("native-v1", ("--mode", "v1")),
            ("openinference-global", ("--instrumentation", "openinference", "--global-provider")),
        )
    ),
    Cell("adk-openinference", "drive_adk.py", ("--instrumentation", "openinference"), "adk"),
    Cell(
        "adk-openinference-global",
        "drive_adk.py",
        ("--instrumentation", "openinference", "--global-provider"),
        "adk",
    ),
    Cell(
        "adk-openinference-global-v1",
        "drive_adk.py",
        ("--instrumentation", "openinference", "--global-provider", "--mode", "v1"),
        "adk",
    ),
    *(
        Cell(f"strands-{mode}", "drive_strands.py", ("--mode", mode), "strands")
        for mode in ("default", "latest", "latest_attributes")
    ),
    *(
        Cell(
            f"strands-multiagent-{mode}",
            "drive_strands.py",
            ("--scenario", "delegation", "--mode", mode),
            "strands",
        )
        for mode in ("default", "latest", "latest_attributes")
    ),
    *(
        Cell(
            f"langgraph-{shape}-openllmetry",
            "drive_langgraph.py",
            ("--shape", shape, "--instrumentation", "openllmetry"),
            "langchain-openllmetry",
        )
        for shape in ("react", "stategraph", "create_agent")
    ),
    *(
        Cell(
            f"langgraph-{shape}-openlit",
            "drive_langgraph.py",
            ("--shape", shape, "--instrumentation", "openlit"),
            "langchain-openlit",
        )
        for shape in ("react", "create_agent")
    ),
    Cell("crewai-openinference", "drive_crewai.py", ("--mode", "wrappers"), "crewai-openinference"),
    Cell("crewai-openinference-events", "drive_crewai.py", ("--mode", "events"), "crewai-openinference"),
    Cell(
        "crewai-multiagent-openinference",
        "drive_crewai.py",
        ("--scenario", "delegation", "--mode", "wrappers"),
        "crewai-openinference",
    ),
    Cell(
        "crewai-multiagent-openinference-events",
        "drive_crewai.py",
        ("--scenario", "delegation", "--mode", "events"),
        "crewai-openinference",
    ),
    Cell("mcp-native", "drive_mcp.py", ("--instrumentation", "native"), "mcp"),
    Cell("mcp-openinference", "drive_mcp.py", ("--instrumentation", "openinference"), "mcp"),
    Cell("mcp-openllmetry", "drive_mcp.py", ("--instrumentation", "openllmetry"), "mcp-openllmetry"),
    *(
        Cell(f"vercel-ai-{name}", "drive_vercel_ai.mjs", args, "node", runtime="node")
        for name, args in (
            ("legacy", ("--mode", "legacy")),
            ("legacy-v7", ("--mode", "legacy-v7")),
            ("legacy-v7-sequential", ("--mode", "legacy-v7", "--sequential")),
            ("genai", ("--mode", "genai")),
            ("genai-sequential", ("--mode", "genai", "--sequential")),
        )
    ),
    # JavaScript agents beyond the AI SDK (issue #27): LangGraph.js through OpenInference JS, the OpenAI
    # Agents SDK for JS through OpenInference JS's processor, and Mastra through its own OTel exporter.
    Cell("langgraphjs-openinference", "drive_langgraph.mjs", (), "node", runtime="node"),
    Cell(
        "langgraphjs-multiagent-openinference",
        "drive_langgraph.mjs",
        ("--scenario", "delegation"),
        "node",
        runtime="node",
    ),
    Cell("openai-agents-js-openinference", "drive_openai_agents.mjs", (), "node", runtime="node"),
    Cell(
        "openai-agents-js-multiagent-openinference",
        "drive_openai_agents.mjs",
        ("--scenario", "delegation"),
        "node",
        runtime="node",
    ),
    Cell("mastra-otel", "drive_mastra.mjs", (), "node", runtime="node"),
    Cell("haystack-native", "drive_haystack.py", ("--tracing", "native"), "haystack"),
    Cell("haystack-native-nocontent", "drive_haystack.py", ("--tracing", "native-nocontent"), "haystack"),
    Cell(
        "haystack-openinference",
        "drive_haystack.py",
        ("--tracing", "openinference"),
        "haystack",
        known_gap=(
            "openinference-instrumentation-haystack 0.1.46 emits no span for a tool call on Haystack 3 "
            "(its Agent runs tools outside any component, and the instrumentation wraps components): a "
            "call's outcome appears only as a `ToolCallResult` repr among the next model call's input "
            "messages (conversation history, with no time of its own, and absent for a call no model "
            "call follows), so nothing is stored as executed and the model's requests stay unjoined"
        ),
    ),
    *(
        Cell(f"haystack2-{tracing}", "drive_haystack.py", ("--tracing", tracing), "haystack2")
        for tracing in ("native", "openinference")
    ),
    Cell("autogen-native", "drive_autogen.py", ("--telemetry", "native", "--model", "replay"), "autogen"),
    # OpenInference's AutoGen tool span is OK when the tool raised (0.1.22 sets OK before it looks at
    # is_error): the failure is read from the next LLM span, which sends the results back to the model.
    Cell(
        "autogen-openinference",
        "drive_autogen.py",
        ("--telemetry", "openinference", "--model", "openai"),
        "autogen",
    ),
    Cell(
        "autogen-openinference-replay",
        "drive_autogen.py",
        ("--telemetry", "openinference", "--model", "replay"),
        "autogen",
        known_gap=(
            "OpenInference's AutoGen tool span is OK when the tool raised (0.1.22 sets OK before it looks "
            "at is_error) and its `output.value` is the exception's text (`no seats left to Oslo`), as "
            "a tool that returned that string would record; AutoGen's `is_error` reaches a span only in "
            "the next LLM span's input, and with a model client OpenInference does not instrument "
            "(AutoGen's ReplayChatCompletionClient) there is none: the trace does not say the tool failed"
        ),
    ),
    # AutoGen's own spans beside OpenInference's: each call is two nested spans, merged into one execution.
    Cell(
        "autogen-openinference-global",
        "drive_autogen.py",
        ("--telemetry", "both", "--model", "openai"),
        "autogen",
    ),
    Cell(
        "autogen-multiagent-native",
        "drive_autogen.py",
        ("--scenario", "delegation", "--telemetry", "native", "--model", "replay"),
        "autogen",
    ),
    Cell(
        "autogen-multiagent-openinference",
        "drive_autogen.py",
        ("--scenario", "delegation", "--telemetry", "openinference", "--model", "openai"),
        "autogen",
    ),
    Cell("pydantic-ai-native", "drive_pydantic_ai.py", ("--mode", "v5"), "pydantic-ai"),
    *(
        Cell(f"pydantic-ai-native-{mode}", "drive_pydantic_ai.py", ("--mode", mode), "pydantic-ai")
        for mode in ("v6", "v2", "nocontent")
    ),
    Cell("agno-openinference", "drive_agno.py", (), "agno-openinference"),
    Cell(
        "openai-agents-multiagent-openinference",
        "drive_openai_agents.py",
        ("--instrumentation", "openinference", "--scenario", "delegation"),
        "openai-agents-openinference",
    ),
    Cell(
        "openai-agents-multiagent-openllmetry",
        "drive_openai_agents.py",
        ("--instrumentation", "openllmetry", "--scenario", "delegation"),
        "openai-agents-openllmetry",
    ),
    Cell(
        "openai-agents-openinference",
        "drive_openai_agents.py",
        ("--instrumentation", "openinference"),
        "openai-agents-openinference",
    ),
    Cell(
        "openai-agents-openllmetry",
        "drive_openai_agents.py",
        ("--instrumentation", "openllmetry"),
        "openai-agents-openllmetry",
    ),
    # Observability SDKs' own spans (issue #27): Langfuse's LangChain CallbackHandler and `@observe`, MLflow
    # Tracing's `@mlflow.trace` and LangChain autolog, each on the application's TracerProvider.
    *(
        Cell(f"langfuse-{mode}", "drive_langfuse.py", ("--mode", mode), "langfuse")
        for mode in ("callback", "observe")
    ),
    *(
        Cell(f"mlflow-{mode}", "drive_mlflow.py", ("--mode", mode), "mlflow")
        for mode in ("trace", "langchain")
    ),
    # Pydantic Logfire as a team runs it, with one more span processor exporting to tracescore.
    *(
        Cell(f"{framework}-logfire", "drive_logfire.py", ("--framework", framework), f"logfire-{framework}")
        for framework in ("openai-agents", "pydantic-ai")
    ),
)

BY_NAME = {cell.name: cell for cell in CELLS}


def venv_root() -> Path:
    """Where the cells' virtualenvs live: outside the clone, so a fresh clone (CI) reuses them."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tracescore" / "frameworks"
    return Path(os.environ.get("TRACESCORE_FRAMEWORK_VENVS", default))


def venv_for(requirements: str) -> Path:
    """The virtualenv of a requirements file, named after its content: a changed pin is a new venv."""
    digest = hashlib.sha256((REQUIREMENTS / f"{requirements}.txt").read_bytes()).hexdigest()[:12]
    return venv_root() / f"{requirements}-{digest}"


def ensure_venv(requirements: str) -> Path:
    """The cell's virtualenv, built on first use (pip from the package registry, pins as written)."""
    venv = venv_for(requirements)
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS / f"{requirements}.txt"),
        ],
        check=True,
    )
    (venv / ".complete").write_text("")
    return python


def ensure_node() -> Path:
    """The Node.js cells' packages, installed once per package-lock.json (`npm ci`, outside the clone);
    the drivers are copied in beside them on every call, since Node resolves imports from a module's
    own folder."""
    digest = hashlib.sha256((NODE / "package-lock.json").read_bytes()).hexdigest()[:12]
    folder = venv_root() / f"node-{digest}"
    if not (folder / ".complete").exists():
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(NODE / name, folder / name)
        subprocess.run(
            ["npm", "ci", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error"],
            check=True,
            capture_output=True,
        )
        (folder / ".complete").write_text("")
    for module in NODE.glob("*.mjs"):
        shutil.copy(module, folder / module.name)
    return folder
