"""`tracescore check` and `doctor --specs` validate specs exactly as `serve` loads them (issue 28, "What was
seen" 2: doctor said `OK specs …: found` for files serve refused): every spec serve refuses, they refuse
with serve's own message and exit 2; what serve starts with, they pass. With data (`--db`, through the
running server or the file), `check` names what the specs expect that the data never showed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests._server import ServeProcess, free_port
from tests.collector.cli.test_gate import GOOD, send, tracescore, wait_scored

BROKEN = {
    "typo.yaml": "name: dispatch\nexpected_tool: [lookup_shipping_cutoff]\n",  # an unknown key
    "invalid.yaml": "name: dispatch\nexpected_tools: [lookup\n",  # not YAML
    "empty.yaml": "",
    "bare.yaml": "name: dispatch\nexpected_tools: lookup_shipping_cutoff\n",  # a bare string for a list
}
SEVERAL = GOOD + "---\nname: quote\nexpected_tools: [quote_shipping]\n"


def serve_refusal(tmp_path: Path, specs: Path) -> str:
    """The line `serve` refuses these specs with (it must refuse them: exit 2)."""
    done = subprocess.run(
        [
            sys.executable, "-m", "collector.cli", "serve", "--db", str(tmp_path / "refused.duckdb"),
            "--grpc", f"127.0.0.1:{free_port()}", "--http", f"127.0.0.1:{free_port()}",
            "--specs", str(specs), "--log-format", "text",
        ],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done
    (line,) = [line for line in done.stderr.splitlines() if str(specs) in line]
    return line.split("tracescore: ", 1)[1]


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_check_and_doctor_refuse_what_serve_refuses_with_its_message(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(BROKEN[name])
    refusal = serve_refusal(tmp_path, path)
    checked = tracescore("check", str(path))
    assert checked.returncode == 2, checked
    assert checked.stderr.splitlines() == [f"tracescore: {refusal}"]
    ports = ("--grpc", f"127.0.0.1:{free_port()}", "--http", f"127.0.0.1:{free_port()}")
    doctor = tracescore("doctor", "--db", str(tmp_path / "new.duckdb"), *ports, "--specs", str(path))
    assert doctor.returncode == 2, doctor
    assert f"FAIL  specs {path}: serve would refuse it: {refusal}" in doctor.stdout, doctor.stdout
    assert "OK    specs" not in doctor.stdout


def test_a_folder_is_checked_file_by_file_and_good_specs_pass(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "several.yaml").write_text(SEVERAL)
    (folder / "typo.yaml").write_text(BROKEN["typo.yaml"].replace("dispatch", "other"))
    (folder / "invalid.yaml").write_text(BROKEN["invalid.yaml"].replace("dispatch", "third"))
    checked = tracescore("check", str(folder))
    assert checked.returncode == 2
    lines = checked.stderr.splitlines()
    assert len(lines) == 2, lines  # each broken file named on its own line; serve stops at the first
    assert lines[0].startswith(f"tracescore: {folder / 'invalid.yaml'}: ")
    assert lines[1].startswith(f"tracescore: {folder / 'typo.yaml'}: spec 'other': expected_tool")
    assert f"ok    {folder / 'several.yaml'}: 2 spec(s): dispatch, quote" in checked.stdout
    (folder / "typo.yaml").unlink()
    (folder / "invalid.yaml").unlink()
    ports = ("--grpc", f"127.0.0.1:{free_port()}", "--http", f"127.0.0.1:{free_port()}")
    assert tracescore("check", str(folder)).returncode == 0
    doctor = tracescore("doctor", "--db", str(tmp_path / "new.duckdb"), *ports, "--specs", str(folder))
    assert doctor.returncode == 0, doctor.stdout
    assert f"OK    specs {folder / 'several.yaml'}: 2 spec(s): dispatch, quote" in doctor.stdout
    (folder / "again.yaml").write_text(GOOD)  # a name used twice across files: serve refuses the set
    twice = tracescore("check", str(folder))
    assert twice.returncode == 2 and "the name is used more than once" in twice.stderr


def test_check_with_data_names_an_unseen_tool_and_a_select_typo(server: ServeProcess, tmp_path: Path) -> None:
    send(server)
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    wait_scored(server.db, str(good))
    unseen = tmp_path / "unseen.yaml"
    unseen.write_text(
        "name: dispatch\nselect: {task: same-day-dispach}\nexpected_tools: [lookup_shiping_cutoff]\n"
        "forbidden_tools: [refund]\n"
    )
    for mode in ("server", "file"):
        if mode == "file":
            assert server.stop() == 0
        checked = tracescore("check", str(unseen), "--db", str(server.db))
        assert checked.returncode == 0, checked  # warnings only
        warnings = [line for line in checked.stdout.splitlines() if line.startswith("warn")]
        assert warnings == [
            "warn  spec 'dispatch': tool 'lookup_shiping_cutoff' never ran nor was requested in the data "
            "(closest seen: 'lookup_shipping_cutoff')",
            "warn  spec 'dispatch': task: 'same-day-dispach' is on no run "
            "(closest seen: 'same-day-dispatch')",
        ], (mode, checked.stdout)  # a forbidden tool never seen is as meant
        assert tracescore("check", str(unseen), "--db", str(server.db), "--strict").returncode == 1
        clean = tracescore("check", str(good), "--db", str(server.db), "--strict")
        assert clean.returncode == 0 and "warn" not in clean.stdout, clean


def test_doctor_says_when_the_running_server_failed_to_reload_its_specs(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "dispatch.yaml").write_text(GOOD)
    server = ServeProcess(db=tmp_path / "live.duckdb", extra_args=("--specs", str(folder))).start()
    try:
        (folder / "dispatch.yaml").write_text(BROKEN["typo.yaml"])  # the live server fails to reload it
        deadline = time.monotonic() + 30
        while not _reload_error(server):
            assert time.monotonic() < deadline, "the server never tried to reload"
            time.sleep(0.2)
        ports = ("--grpc", server.grpc_endpoint, "--http", f"127.0.0.1:{server.http_port}")
        doctor = tracescore("doctor", "--db", str(server.db), *ports)
        assert doctor.returncode == 0, doctor.stdout  # a warning: the server runs on its last good specs
        served = f"WARN  specs of the serve at http://127.0.0.1:{server.http_port}: its last reload failed ("
        assert served in doctor.stdout, doctor.stdout
        with_specs = tracescore("doctor", "--db", str(server.db), *ports, "--specs", str(folder))
        assert with_specs.returncode == 2 and "FAIL  specs" in with_specs.stdout, with_specs.stdout
    finally:
        server.kill()


def _reload_error(server: ServeProcess) -> str | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/api/v1/specs", timeout=5) as response:
        error: str | None = json.loads(response.read())["reload_error"]
    return error
