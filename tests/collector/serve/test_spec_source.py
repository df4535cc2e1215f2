"""Spec files caught while they are being written (issue 26): a start waits for the whole file rather
than refusing it ("holds no spec") or scoring by half of it, and a reload does not drop or shorten the
specs in force. A Kubernetes ConfigMap volume (each file twice: a link and its `..<time>/` copy,
replaced by renaming a `..data` link) loads each spec once and reloads when the map changes."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from collector.serve._spec_source import SpecSource
from scoring import load_specs

# Block-style lists: a file cut short after any line of tools still parses, as a spec with fewer tools.
V1 = """\
- name: dispatch
  select: {task: dispatch}
  expected_tools:
    - lookup_cutoff
    - quote_shipping
"""
V2 = """\
- name: dispatch
  select: {task: dispatch}
  expected_tools:
    - lookup_cutoff
    - quote_shipping
    - send_confirmation
- name: stock
  select: {task: stock}
  expected_tools:
    - check_stock
    - reserve_stock
"""


def _fingerprints(text: str, folder: Path) -> list[str]:
    """What the specs of `text` are, read whole from a file of their own."""
    whole = folder / f"whole-{abs(hash(text))}.yaml"
    whole.write_text(text)
    return [s.fingerprint for s in load_specs([whole])]


class SlowWriter(threading.Thread):
    """Writes `text` over `path` as a plain `open(path, "w")` does, in pieces 30 ms apart (~0.4 s)."""

    def __init__(self, path: Path, text: str) -> None:
        super().__init__(daemon=True)
        self.path, self.text = path, text
        self.started_writing = threading.Event()

    def run(self) -> None:
        with self.path.open("w") as file:
            for start in range(0, len(self.text), 16):
                file.write(self.text[start : start + 16])
                file.flush()
                self.started_writing.set()
                time.sleep(0.03)


def test_a_start_that_catches_a_spec_file_mid_write_reads_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "specs" / "dispatch.yaml"
    path.parent.mkdir()
    writer = SlowWriter(path, V2)
    writer.start()
    assert writer.started_writing.wait(5)

    source = SpecSource([path.parent])  # what `serve --specs` does first; a torn read was refused

    assert [s.fingerprint for s in source.specs] == _fingerprints(V2, tmp_path)
    writer.join()


def test_a_reload_that_catches_a_spec_file_mid_write_keeps_the_specs_in_force(tmp_path: Path) -> None:
    path = tmp_path / "dispatch.yaml"
    path.write_text(V1)
    os.utime(path, (time.time() - 10, time.time() - 10))  # written a while ago
    source = SpecSource([path])
    old, new = _fingerprints(V1, tmp_path), _fingerprints(V2, tmp_path)
    assert [s.fingerprint for s in source.specs] == old

    writer = SlowWriter(path, V2)
    writer.start()
    seen = []
    while writer.is_alive():  # polled far more often than serve's once a second
        source.refresh()
        seen.append([s.fingerprint for s in source.specs])
        time.sleep(0.005)
    assert all(fingerprints in (old, new) for fingerprints in seen), "specs from half a file were in force"
    assert source.failed_reloads == 0 and source.error is None, source.error

    deadline = time.monotonic() + 5
    while source.reloads == 0 and time.monotonic() < deadline:
        source.refresh()
        time.sleep(0.05)
    assert [s.fingerprint for s in source.specs] == new
    assert source.failed_reloads == 0


def _configmap_version(volume: Path, name: str, text: str) -> None:
    """What the kubelet does to a ConfigMap volume: the files in a new `..<time>` folder, then the
    `..data` link renamed onto it at once; each file is a link through `..data`."""
    version = volume / f"..{name}"
    version.mkdir()
    (version / "shop.yaml").write_text(text)
    (volume / "..data_tmp").symlink_to(version.name)
    (volume / "..data_tmp").rename(volume / "..data")
    if not (volume / "shop.yaml").is_symlink():
        (volume / "shop.yaml").symlink_to("..data/shop.yaml")


def test_a_configmap_volume_is_read_once_and_reloaded_when_the_map_changes(tmp_path: Path) -> None:
    volume = tmp_path / "specs"
    volume.mkdir()
    _configmap_version(volume, "2026_12_04_17_00_00.1", V1)
    source = SpecSource([volume])  # each spec was read twice, and refused as a duplicate
    assert [s.fingerprint for s in source.specs] == _fingerprints(V1, tmp_path)

    _configmap_version(volume, "2026_12_04_17_05_00.2", V2)
    deadline = time.monotonic() + 5
    while source.reloads == 0 and time.monotonic() < deadline:
        source.refresh()
        time.sleep(0.05)
    assert [s.fingerprint for s in source.specs] == _fingerprints(V2, tmp_path)
    assert source.failed_reloads == 0 and source.error is None, source.error
