"""Specs given as YAML text or parsed data (the Python API, the pytest plugin): validated as files are,
bounded as files are, every problem one message naming where the spec came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoring import SpecError, load_specs
from scoring.spec.files import load_spec_data, load_spec_text

TEXT = """
- name: a
  expected_tools: [lookup]
- name: b
  arguments: {lookup: {id: 7}}
"""


def test_text_and_data_give_the_specs_a_file_gives(tmp_path: Path) -> None:
    path = tmp_path / "specs.yaml"
    path.write_text(TEXT)
    from_file = [s.fingerprint for s in load_specs([path])]
    assert [s.fingerprint for s in load_spec_text(TEXT)] == from_file
    data = [{"name": "a", "expected_tools": ["lookup"]}, {"name": "b", "arguments": {"lookup": {"id": 7}}}]
    assert [s.fingerprint for s in load_spec_data(data)] == from_file


def _alias_bomb(levels: int = 7) -> str:
    """Each level a list of ten aliases of the one before: 10**levels nodes from a few lines."""
    lines = ["- &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"- &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: a\nexpected_tols: [x]\n", "<spec text>: spec 'a': expected_tols: unknown key"),
        ("name: [unclosed\n", "<spec text>: not valid YAML"),
        ("", "<spec text>: holds no spec"),
        (_alias_bomb(), "<spec text>: refused: its aliases expand"),
    ],
)
def test_bad_text_is_one_message_naming_it(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text)
    assert str(caught.value).startswith(message)
