"""Settings: flag > `TRACESCORE_*` environment > YAML file (`--config` / `TRACESCORE_CONFIG`) > default.

A bad value in the file names the file, the key and the fix; a bad variable names the variable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collector.serve.settings import (
    SERVE_SETTINGS,
    Address,
    ServeSettings,
    SettingError,
    read_config_file,
    resolve_serve_settings,
)
from tests._server import free_port


def _config(tmp_path: Path, text: str, name: str = "tracescore.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_precedence_is_flag_then_environment_then_file_then_default(tmp_path: Path) -> None:
    config = _config(tmp_path, "grace_seconds: 5\nidle_timeout_seconds: 40\nmax_request_mib: 8\n")
    env = {"TRACESCORE_GRACE_SECONDS": "7", "TRACESCORE_IDLE_TIMEOUT_SECONDS": "50"}
    settings = resolve_serve_settings({"grace_seconds": 9.0}, env, config)
    assert settings.grace_seconds == 9.0  # flag over environment and file
    assert settings.idle_timeout_seconds == 50.0  # environment over file
    assert settings.max_request_mib == 8  # file over default
    assert settings.max_backlog_spans == ServeSettings().max_backlog_spans  # default
    assert settings.config_file == config
    assert resolve_serve_settings({}, {}, None) == ServeSettings()


def test_every_setting_can_be_written_in_the_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("s3cret\n")
    config = _config(
        tmp_path,
        """
db: data/traces.duckdb
grpc: 127.0.0.1:5317
http: "127.0.0.1:5318"
grace-seconds: 0.5          # the flag's spelling works too
insecure_listen: false
auth_token_file: token
allowed_hosts: [tracescore.internal, tracescore]
specs: [specs/, /abs/other.yaml]
plugins: my_checks
export_protocol: http/protobuf
log_format: json
log_level: WARNING
memory_limit: 512MB
tls_cert:
""",
    )
    settings = resolve_serve_settings({}, {}, config)
    assert settings.db == tmp_path / "data/traces.duckdb"  # relative to the file, not the working dir
    assert (settings.grpc, settings.http) == (Address("127.0.0.1", 5317), Address("127.0.0.1", 5318))
    assert settings.grace_seconds == 0.5 and settings.insecure_listen is False
    assert settings.auth_token == "s3cret"
    assert settings.allowed_hosts == ("tracescore.internal", "tracescore")
    assert settings.specs == (tmp_path / "specs", Path("/abs/other.yaml"))
    assert settings.plugins == ("my_checks",)
    assert (settings.export_protocol, settings.log_format, settings.log_level) == (
        "http/protobuf",
        "json",
        "warning",
    )
    assert settings.memory_limit == "512MB" and settings.tls_cert is None  # `key:` alone leaves the default
    documented = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    for setting in SERVE_SETTINGS:  # docs/configuration.md lists every key and variable
        assert f"`{setting.key}`" in documented and f"`{setting.env}`" in documented, setting.key


def test_tracescore_config_names_the_file_and_config_beats_it(tmp_path: Path) -> None:
    from_env = _config(tmp_path, "grace_seconds: 3\n", "env.yaml")
    from_flag = _config(tmp_path, "grace_seconds: 4\n", "flag.yaml")
    env = {"TRACESCORE_CONFIG": str(from_env)}
    assert resolve_serve_settings({}, env).grace_seconds == 3.0
    assert resolve_serve_settings({}, env, from_flag).grace_seconds == 4.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("grace_seconds: soon\n", ["grace_seconds", "'soon'", "`grace_seconds: 2`"]),
        ("grace_seconds: -1\n", ["grace_seconds", "greater than 0", "`grace_seconds: 2`"]),
        ("grpc: 4317\n", ["grpc", "HOST:PORT", "`grpc: 127.0.0.1:4317`"]),
        ("grpc: [a, b]\n", ["grpc", "not a list", "`grpc: 127.0.0.1:4317`"]),
        ("specs: {a: 1}\n", ["specs", "list of values", "`specs: [specs/]`"]),
        ("export_protocol: thrift\n", ["export_protocol", "grpc or http/protobuf"]),
        ("insecure_listen: maybe\n", ["insecure_listen", "true or false"]),
        ("grace: 2\n", ["unknown setting 'grace'", "did you mean grace_seconds?"]),
        ("- grace_seconds: 2\n", ["expected a mapping of setting: value"]),
        ("grace_seconds: [2\n", ["not valid YAML at line"]),
    ],
)
def test_a_bad_file_names_the_file_the_key_and_the_fix(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    config = _config(tmp_path, text)
    with pytest.raises(SettingError) as caught:
        read_config_file(config)
    message = str(caught.value)
    assert message.startswith(f"{config}: "), message
    for needle in expected:
        assert needle in message, message


def test_a_missing_file_and_a_bad_variable_say_so(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match=r"TRACESCORE_CONFIG .*nope\.yaml: no such configuration file"):
        resolve_serve_settings({}, {"TRACESCORE_CONFIG": str(tmp_path / "nope.yaml")})
    with pytest.raises(SettingError, match=r"--config .*nope\.yaml: no such configuration file"):
        resolve_serve_settings({}, {}, tmp_path / "nope.yaml")
    with pytest.raises(
        SettingError, match=r"TRACESCORE_MAX_REQUEST_MIB='lots'.*TRACESCORE_MAX_REQUEST_MIB=64"
    ):
        resolve_serve_settings({}, {"TRACESCORE_MAX_REQUEST_MIB": "lots"})
    # The file is checked whole, even a key that a variable overrides: a broken file never hides.
    config = _config(tmp_path, "grace_seconds: soon\n")
    with pytest.raises(SettingError, match="grace_seconds"):
        resolve_serve_settings({}, {"TRACESCORE_GRACE_SECONDS": "2"}, config)


def _tracescore(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_serve_reads_the_file_and_the_environment_and_flags_win(tmp_path: Path) -> None:
    grpc, http_file, http_env = free_port(), free_port(), free_port()
    config = _config(
        tmp_path,
        f"db: state/t.duckdb\ngrpc: 127.0.0.1:{grpc}\nhttp: 127.0.0.1:{http_file}\nlog_format: json\n",
    )
    (tmp_path / "state").mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "collector.cli", "serve", "--config", str(config), "--log-level", "info"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "TRACESCORE_HTTP": f"127.0.0.1:{http_env}"},
        cwd=tmp_path.parent,  # the file's relative db path does not depend on where serve runs
    )
    api = tmp_path / "state" / "t.duckdb.api.json"
    try:
        deadline = time.monotonic() + 30
        while not api.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert api.exists(), process.stdout.read() if process.poll() is not None and process.stdout else ""
        addresses = json.loads(api.read_text())
        assert addresses["grpc"] == f"127.0.0.1:{grpc}"  # from the file
        assert addresses["http"] == f"http://127.0.0.1:{http_env}"  # the environment beat the file
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    first = json.loads(output.splitlines()[0])  # log_format: json from the file
    assert first["message"] == f"settings read from {config}"

    refused = _tracescore("serve", "--config", str(_config(tmp_path, "grace_seconds: soon\n", "bad.yaml")))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (
        f"{tmp_path / 'bad.yaml'}: grace_seconds" in refused.stderr and "grace_seconds: 2" in refused.stderr
    )


def test_doctor_reads_the_same_file(tmp_path: Path) -> None:
    config = _config(
        tmp_path, f"db: d.duckdb\nhttp: 127.0.0.1:{free_port()}\ngrpc: 127.0.0.1:{free_port()}\n"
    )
    result = _tracescore("doctor", "--config", str(config))
    assert str(tmp_path / "d.duckdb") in result.stdout, result.stdout + result.stderr
