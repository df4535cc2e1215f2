"""Same traces, same verdicts: from `tracescore serve` over OTLP, and from the Collector's `otel_traces`
table in ClickHouse's engine (chDB) through `tracescore score --clickhouse`.

Every convention's traces (tests/collector/clickhouse/_corpus.py) go to a real server with specs, and
into the exporter's table written as the exporter writes it. The CLI then scores the table: each run
gets the verdict serve gave it, shards split the runs with none twice and none left out, and the
verdicts stored in `tracescore_verdicts` join back to the traces.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest

from collector.clickhouse.in_memory import judge_in_memory, scores_rows
from collector.clickhouse.scorer import judge_through_store
from collector.decode.from_json import decode_json
from scoring import Spec, load_specs
from tests.collector.clickhouse._chdb_tool import query
from tests.collector.clickhouse._corpus import Corpus, build_corpus, framework_specs, load_clickhouse

Key = tuple[str, str]  # (run_id, spec)


@dataclass
class Loaded:
    corpus: Corpus
    clickhouse: Path

    @property
    def url(self) -> str:
        return f"chdb:{self.clickhouse}"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    directory = tmp_path_factory.mktemp("clickhouse-parity")
    corpus = build_corpus(directory)
    load_clickhouse(directory / "clickhouse", corpus.requests)
    yield Loaded(corpus, directory / "clickhouse")


def tracescore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )


def score(loaded: Loaded, *extra: str) -> dict[Key, dict[str, Any]]:
    done = tracescore(
        "score", "--clickhouse", loaded.url, "--spec", str(loaded.corpus.specs), "--format", "json", *extra
    )
    assert done.returncode in (0, 1), done.stderr
    verdicts = json.loads(done.stdout)
    keyed = {(v["run_id"], v["spec"]): v for v in verdicts}
    assert len(keyed) == len(verdicts), "a run was judged twice by one spec"
    return keyed


def serve_verdicts(db: Path) -> dict[Key, dict[str, Any]]:
    """The latest verdict serve stored for each run and spec."""
    with duckdb.connect(str(db), read_only=True) as connection:
        found = connection.execute(
            "SELECT run_id, spec, verdict FROM verdicts "
            "QUALIFY row_number() OVER (PARTITION BY run_id, spec ORDER BY run_version DESC) = 1"
        ).fetchall()
    return {(run, spec): json.loads(text) for run, spec, text in found}


def runs_of_trace(db: Path, trace_id: str) -> set[str]:
    with duckdb.connect(str(db), read_only=True) as connection:
        return {
            r[0]
            for r in connection.execute("SELECT run_id FROM runs WHERE trace_id = ?", [trace_id]).fetchall()
        }


def _comparable(verdict: dict[str, Any]) -> dict[str, Any]:
    # A run serve recomputed when a late span arrived has a higher version there; its content is compared.
    return {k: v for k, v in verdict.items() if k != "run_version"}


def test_every_run_gets_the_verdict_serve_gave_it(loaded: Loaded) -> None:
    from_serve = serve_verdicts(loaded.corpus.serve_db)
    from_clickhouse = score(loaded)
    assert len(from_clickhouse) > 100
    # Traces with no agent, tool or chat span and no run mark are not chosen from ClickHouse
    # (docs/clickhouse.md): serve judges them `error`, naming their scopes. That is the only difference.
    skipped = runs_of_trace(loaded.corpus.serve_db, loaded.corpus.unknown_trace_id)
    assert skipped
    assert {key for key in from_serve if key not in from_clickhouse} == {
        key for key in from_serve if key[0] in skipped
    }
    assert set(from_clickhouse) <= set(from_serve)
    different = [
        key for key in from_clickhouse if _comparable(from_clickhouse[key]) != _comparable(from_serve[key])
    ]
    assert different == [], (
        different[:3],
        [from_clickhouse[k] for k in different[:1]],
        [from_serve[k] for k in different[:1]],
    )


def test_a_batch_judged_in_memory_gets_the_verdicts_of_the_scratch_store(loaded: Loaded) -> None:
    """`score --clickhouse` judges a batch in memory (collector/clickhouse/in_memory.py) unless SQL over its
    runs is asked for (`--where`, a conversation spec), when it goes through the writer into a scratch
    store. Both ways give every run of
    every convention the same verdict, in the same order: tool definitions (`schema: from_trace`) and
    the runs no convention reads (the corpus' database and HTTP trace) included, which the in-memory way
    reads from the batch's spans on demand."""
    spans = [span for r in loaded.corpus.requests for span in decode_json(json.dumps(r).encode()).spans]
    from_trace = Spec.model_validate({"name": "every-run/schema", "schema": "from_trace"})
    specs = [*load_specs([loaded.corpus.specs]), from_trace]
    judged = judge_in_memory(spans, specs)
    assert judged is not None
    through_the_store, stored_rows = judge_through_store(spans, specs, records=True)
    assert len(judged.verdicts) > 100
    assert [v.to_dict() for v in judged.verdicts] == [v.to_dict() for v in through_the_store]
    verdicts = [v.to_dict() for v in judged.verdicts]
    assert any(c["kind"] == "schema" for v in verdicts if v["spec"] == from_trace.name for c in v["checks"])
    assert any(v["label"] == "error" and "no convention" in v["reason"] for v in verdicts)
    # The `scores` rows `--store` and `--follow` write, but for when each was stored.
    rows = scores_rows(judged)
    assert [{**r, "evaluated_at": None} for r in rows] == [{**r, "evaluated_at": None} for r in stored_rows]
    assert {r["root_span_id"] for r in rows} - {None} and {r["ServiceName"] for r in rows} - {"unknown"}


def test_shards_are_disjoint_and_their_union_is_the_whole(loaded: Loaded) -> None:
    whole = score(loaded)
    shards = [score(loaded, "--shard", f"{i}/3") for i in range(3)]
    assert all(shards), "a shard got no run at all: the split is not by trace"
    for i in range(3):
        for j in range(i + 1, 3):
            assert not set(shards[i]) & set(shards[j])
    union = {key: verdict for shard in shards for key, verdict in shard.items()}
    assert union == whole


def test_stored_verdicts_join_back_to_the_traces(loaded: Loaded) -> None:
    scored = score(loaded, "--store")
    scored_again = score(loaded, "--store")  # re-scoring replaces: still one row per run and spec
    assert scored_again.keys() == scored.keys()
    stored = query(
        loaded.clickhouse,
        "SELECT v.run_id, v.scorer, v.verdict, v.score, v.verdict_json, "
        "countIf(t.SpanId = v.root_span_id) AS root_found, count() AS spans "
        "FROM otel.tracescore_verdicts AS v FINAL "
        "INNER JOIN otel.otel_traces AS t ON t.TraceId = v.TraceId "
        "GROUP BY v.run_id, v.scorer, v.verdict, v.score, v.verdict_json",
    )
    columns = [
        r[0]
        for r in query(
            loaded.clickhouse,
            "SELECT name FROM system.columns WHERE database = 'otel' "
            "AND table = 'tracescore_verdicts' ORDER BY position",
        )
    ]
    assert {(r[0], r[1]) for r in stored} == set(scored)
    assert len(stored) == len(scored)
    for run_id, spec, label, value, text, root_found, spans in stored:
        verdict = scored[(run_id, spec)]
        assert json.loads(text) == verdict
        assert label == ("error" if verdict["label"] == "error" else "pass" if verdict["passed"] else "fail")
        assert value == verdict["value"]
        assert root_found == 1 and spans >= 1
    assert columns == [
        "run_id",
        "TraceId",
        "root_span_id",
        "scorer",
        "scorer_version",
        "verdict",
        "label",
        "score",
        "explanation",
        "evaluated_at",
        "run_version",
        "task_id",
        "verdict_json",
        "ServiceName",
        "date",
    ]


def test_report_from_clickhouse_is_the_report_of_the_same_runs(loaded: Loaded, tmp_path: Path) -> None:
    """Specs that select by service (the recorded frameworks'): the task results from ClickHouse equal
    those `report --db` gives on what serve stored."""
    specs = tmp_path / "frameworks.yaml"
    specs.write_text(framework_specs())
    common = ("--spec", str(specs), "--format", "json")
    from_clickhouse = tracescore("report", "--clickhouse", loaded.url, *common)
    from_db = tracescore("report", "--db", str(loaded.corpus.serve_db), *common)
    assert from_clickhouse.returncode == 0, from_clickhouse.stderr
    assert from_db.returncode == 0, from_db.stderr
    tasks = json.loads(from_clickhouse.stdout)
    assert len(tasks) > 30
    assert tasks == json.loads(from_db.stdout)
