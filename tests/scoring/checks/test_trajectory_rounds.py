"""Strict trajectories with parallel calls (issue 20): the calls of one round (one chat span's request)
are compared as a set, as agentevals' strict mode compares the calls of one assistant message; calls of
different rounds, and calls that answered no captured request, keep their start order."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.checks._trajectory import in_rounds
from scoring.evidence.runs import Execution
from tests.scoring.checks.test_checks_catalogue import ex, kinds, req, spec, verdict


def strict(*tools: Any) -> Any:
    return spec(trajectory={"mode": "strict", "tools": list(tools)})


def one_round(*calls: Execution, round_: int = 1, chat: str = "chat-1") -> list[Any]:
    """The requests of one chat span, each answered by its call."""
    return [req(c.tool_name, answered_by=c, round=round_, chat=chat, position=i) for i, c in enumerate(calls)]


def test_calls_of_one_round_are_a_set() -> None:
    # The model asked for weather then news; news happened to start first.
    news, weather = ex("news", at=(1, 2)), ex("weather", at=(3, 4))
    v = verdict(strict("weather", "news"), news, weather, *one_round(weather, news))
    assert kinds(v) == [("trajectory", "strict", True)]
    assert v.checks[0].observed == {"calls": ["news", "weather"], "parallel_rounds": [["news", "weather"]]}


def test_without_requests_start_order_decides() -> None:
    news, weather = ex("news", at=(1, 2)), ex("weather", at=(3, 4))
    v = verdict(strict("weather", "news"), news, weather)
    assert kinds(v) == [("trajectory", "strict", False)]
    assert v.checks[0].detail.startswith("trajectory (strict): position 1: expected weather, got news")
    assert "parallel_rounds" not in v.checks[0].observed


def test_calls_of_different_rounds_keep_their_order() -> None:
    news, weather = ex("news", at=(1, 2)), ex("weather", at=(3, 4))
    requests = [*one_round(news, round_=1, chat="chat-1"), *one_round(weather, round_=2, chat="chat-2")]
    v = verdict(strict("weather", "news"), news, weather, *requests)
    assert kinds(v) == [("trajectory", "strict", False)]
    assert v.checks[0].detail.startswith("trajectory (strict): position 1: expected weather, got news")


def test_a_round_is_a_set_at_its_own_positions_only() -> None:
    # lookup (round 1), then weather + news (round 2, news first), then quote (round 3).
    lookup, news, weather, quote = (
        ex("lookup", at=(0, 1)),
        ex("news", at=(2, 3)),
        ex("weather", at=(2.5, 3.5)),
        ex("quote", at=(5, 6)),
    )
    requests = [
        *one_round(lookup, round_=1, chat="c1"),
        *one_round(weather, news, round_=2, chat="c2"),
        *one_round(quote, round_=3, chat="c3"),
    ]
    calls = (lookup, news, weather, quote)
    assert verdict(strict("lookup", "weather", "news", "quote"), *calls, *requests).passed is True
    assert verdict(strict("lookup", "news", "weather", "quote"), *calls, *requests).passed is True
    # The set is the round's: an item of another position cannot be paired inside it.
    moved = verdict(strict("weather", "lookup", "news", "quote"), *calls, *requests)
    assert moved.passed is False
    assert moved.checks[0].detail.startswith("trajectory (strict): position 1: expected weather, got lookup")
    wrong = verdict(strict("lookup", "weather", "quote", "news"), *calls, *requests)
    assert wrong.checks[0].detail.startswith(
        "trajectory (strict): positions 2-3 (one parallel round, compared as a set): "
        "expected weather, quote, got news (call "
    )


def test_a_round_interrupted_by_another_call_is_gathered_at_its_first_call() -> None:
    # Two agents: the leader's round (a, b) and a member's call c that started between them.
    a, c, b = ex("a", at=(1, 2)), ex("c", at=(1.5, 2.5)), ex("b", at=(2, 3))
    requests = one_round(b, a, chat="leader-chat")
    places = in_rounds([a, c, b], {a.key: (1, "leader-chat"), b.key: (1, "leader-chat")})
    assert [[e.tool_name for e in group] for group in places] == [["a", "b"], ["c"]]
    assert verdict(strict("b", "a", "c"), a, c, b, *requests).passed is True
    assert verdict(strict("c", "a", "b"), a, c, b, *requests).passed is False


def test_rounds_with_the_same_number_in_different_chat_spans_are_different_rounds() -> None:
    # A run over two traces numbers each trace's rounds from 1: the chat span tells them apart.
    news, weather = ex("news", at=(1, 2)), ex("weather", at=(3, 4))
    requests = [*one_round(news, chat="trace-1-chat"), *one_round(weather, chat="trace-2-chat")]
    assert verdict(strict("weather", "news"), news, weather, *requests).passed is False


@pytest.mark.parametrize(
    ("tools", "ok", "detail"),
    [
        (["f", "f", "g"], True, "3 clean call(s) are the same sequence"),
        (["g", "f", "f"], True, "3 clean call(s) are the same sequence"),
        (["f", "g"], False, "3 clean call(s) for 2 expected"),  # a call of the round left over
        (["f", "f"], False, "3 clean call(s) for 2 expected"),
        (["f", "f", "g", "h"], False, "3 clean call(s) for 4 expected"),
        (["f", "g", "g"], False, "positions 1-3 (one parallel round, compared as a set)"),
    ],
)
def test_a_round_is_a_multiset_of_the_same_size(tools: list[str], ok: bool, detail: str) -> None:
    f1, g, f2 = ex("f", at=(1, 2)), ex("g", at=(1, 3)), ex("f", at=(2, 3))
    v = verdict(strict(*tools), f1, g, f2, *one_round(f1, g, f2))
    assert kinds(v) == [("trajectory", "strict", ok)]
    assert detail in v.checks[0].detail


def test_argument_rules_inside_a_round_pair_optimally() -> None:
    # BFCL's counterexample M inside one round: first fit fails it, maximum matching does not.
    f1, f2 = ex("f", {"x": 1}, at=(1, 2)), ex("f", {"x": 2}, at=(1, 2))
    items = (
        {"tool": "f", "values": {"x": {"any_of": [1, 2]}}},
        {"tool": "f", "values": {"x": {"any_of": [1]}}},
    )
    assert verdict(strict(*items), f1, f2, *one_round(f1, f2)).passed is True
    bad = ex("f", {"x": 3}, at=(1, 2))
    assert verdict(strict(*items), f1, bad, *one_round(f1, bad)).passed is False


def test_unclean_calls_of_a_round_take_no_place() -> None:
    a, broken, b = ex("a", at=(1, 2)), ex("b", at=(1, 2), error=True), ex("b", at=(3, 4))
    requests = [*one_round(broken, a, chat="c1"), *one_round(b, round_=2, chat="c2")]
    assert verdict(strict("a", "b"), a, broken, b, *requests).passed is True
