"""What the memory guard counts (issues 32 and 33): the server's own memory and the library pages it
really uses, its decode workers' own memory, never another child; handing memory back to the system
starts no process of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from collector.decode.pool import Preparer
from collector.serve.memory import HOT_FILE_BYTES, MIB, held_bytes, resident_bytes
from tests._child import ROOT, child_json
from tests._otel import stored_rows
from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._server import ServeProcess

FAT_CHILD_MIB = 500


def _fat_child(mib: int = FAT_CHILD_MIB) -> str:
    """A child that really holds `mib` MiB resident (every page written), says so, and waits."""
    return f"import time; block = b'x' * ({mib} << 20); print('holding', flush=True); time.sleep(120)"


def _rss(pid: int | str) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_releasing_free_memory_starts_no_process() -> None:
    # Audit hooks see every process Python starts (subprocess, fork, spawn, system); ctypes' library
    # lookup ran `/sbin/ldconfig -p` through subprocess on every call. In a process of its own: an audit
    # hook cannot be taken back.
    probe = textwrap.dedent(
        """
        import json, sys
        from collector.store.memory_settings import apply_memory_settings, release_free_memory
        starts = ("subprocess.", "os.fork", "os.posix_spawn", "os.spawn", "os.system", "os.exec")
        started = []
        sys.addaudithook(lambda event, args: started.append(event) if event.startswith(starts) else None)
        apply_memory_settings()
        for _ in range(20):
            release_free_memory()
        print(json.dumps(started))
        """
    )
    assert child_json(probe) == []


@pytest.fixture
def fat_child() -> object:
    child = subprocess.Popen([sys.executable, "-c", _fat_child()], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
        yield child
    finally:
        child.kill()
        child.wait(10)


def test_a_child_that_is_not_a_decode_worker_is_not_counted(fat_child: subprocess.Popen[str]) -> None:
    assert _rss(fat_child.pid) >= FAT_CHILD_MIB * MIB  # it really holds what it should not be charged for
    assert held_bytes() <= _rss("self")  # this process alone: no child in it
    # Named as a worker, the same child is counted: the pids decide, not the process tree.
    assert held_bytes([fat_child.pid]) - held_bytes() >= FAT_CHILD_MIB * MIB


def _status_kib(field: str) -> int:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1])


def test_library_pages_count_up_to_the_hot_share_and_private_memory_counts_whole() -> None:
    # This process maps DuckDB, gRPC and Python's libraries: far more file-backed pages than a server
    # uses under load. The budget counts its private memory and at most HOT_FILE_BYTES of those pages.
    import duckdb  # noqa: F401  (its 68 MB library, mapped and partly read, as in a server)

    assert _status_kib("RssFile") * 1024 > HOT_FILE_BYTES + 16 * MIB
    before = (_status_kib("RssAnon") + _status_kib("RssShmem")) * 1024
    held = held_bytes()
    after = (_status_kib("RssAnon") + _status_kib("RssShmem")) * 1024
    # Read around the call: this process's memory may move between reads (another thread, a collection).
    assert min(before, after) - 8 * MIB < held - HOT_FILE_BYTES < max(before, after) + 8 * MIB, held // MIB
    assert resident_bytes() - held > 16 * MIB  # the whole resident set counts the cold pages too
    block = bytearray(96 * MIB)
    block[:: os.sysconf("SC_PAGE_SIZE")] = b"x" * len(range(0, len(block), os.sysconf("SC_PAGE_SIZE")))
    assert held_bytes() - held >= 90 * MIB  # memory written is held, all of it
    del block


@pytest.fixture
def one_worker() -> Iterator[Preparer]:
    """A decode pool of one worker, up and taking requests; closed after the test."""
    preparer = Preparer(1)
    preparer.start()
    try:
        deadline = time.monotonic() + 60
        while not preparer.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        assert preparer.ready
        yield preparer
    finally:
        preparer.close()


def test_the_pool_names_its_running_workers_and_none_once_closed(one_worker: Preparer) -> None:
    pids = one_worker.worker_pids()
    assert len(pids) == 1
    status = Path(f"/proc/{pids[0]}/status").read_text()
    assert f"PPid:\t{os.getpid()}\n" in status  # a child of this process, alive
    one_worker.close()
    assert one_worker.worker_pids() == []


def test_a_workers_library_pages_are_counted_once_with_the_servers(one_worker: Preparer) -> None:
    # A worker maps the server's libraries (39 of an idle worker's 65 MiB): the kernel keeps those pages
    # once and a container is charged once, so the budget counts the worker's own memory only.
    (worker,) = one_worker.worker_pids()
    statm = Path(f"/proc/{worker}/statm").read_text().split()
    page = os.sysconf("SC_PAGE_SIZE")
    resident, file_backed = int(statm[1]) * page, int(statm[2]) * page
    assert file_backed > 16 * MIB  # the libraries really are there to be counted twice
    # This process's own memory is read in each call and may move between them: read it on both sides.
    alone_before, with_worker, alone_after = held_bytes(), held_bytes([worker]), held_bytes()
    lowest, highest = (
        with_worker - max(alone_before, alone_after),
        with_worker - min(alone_before, alone_after),
    )
    own = resident - file_backed
    assert lowest - 4 * MIB < own < highest + 4 * MIB, (lowest // MIB, highest // MIB, own // MIB)


def test_a_server_with_a_fat_child_that_is_no_worker_keeps_accepting(tmp_path: Path) -> None:
    # The real path: a plugin (imported by `serve --plugin` before anything opens) starts a child holding
    # 500 MiB. Counting it put a ~200 MiB server over the refusal mark of a 700 MB budget (600 MiB),
    # and every request was refused for memory the server does not hold.
    pid_file = tmp_path / "child.pid"
    (tmp_path / "fat_child_plugin.py").write_text(
        textwrap.dedent(
            f"""
            import subprocess, sys
            _child = subprocess.Popen(
                [sys.executable, "-c", {_fat_child()!r}], stdout=subprocess.PIPE, text=True
            )
            _child.stdout.readline()
            open({str(pid_file)!r}, "w").write(str(_child.pid))
            """
        )
    )
    server = ServeProcess(
        tmp_path / "fat.duckdb",
        extra_args=("--memory-limit", "700MB", "--decode-workers", "0", "--plugin", "fat_child_plugin"),
        env={"PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])},
    ).start()
    try:
        child = int(pid_file.read_text())
        assert _rss(child) >= FAT_CHILD_MIB * MIB
        trace = new_trace_id()
        status, answer = post_json(server.http_url, request([span(trace, new_span_id(), "invoke_agent a")]))
        assert status == 200, (status, answer, server.log())
    finally:
        assert server.stop() == 0, server.log()
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert stored_rows(server, "SELECT count(*) AS n FROM spans") == [{"n": 1}]
