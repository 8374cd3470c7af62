"""The whole-list way in for long TensorLake rule lists (``contracts._bulk``) against the per-entry rule.

``canonical_entries`` may only ever answer "these entries, unchanged, with these indexes" for a list the
per-entry rule (``classify_entry``) keeps as it is; anything else must send the list the per-entry way. The
near misses below are entries a too-lenient whole-list check would let through, and ``WRONG`` holds such
checks: each one must fail ``_agrees`` on some near miss.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import _bulk
from contracts._bulk import BULK_MIN, canonical_entries
from contracts._naive import decide_dns_naive, decide_egress_naive
from contracts.tensorlake import (
    ListName,
    NetworkConfig,
    PolicyError,
    _build_indexes,
    classify_entry,
    decide_dns,
    decide_egress,
)
from harness.policy.tensorlake.strategies import allow_entries, decorate, deny_entries

FILLER = [f"svc{i}.team{i % 7}.example.com" for i in range(BULK_MIN)]
KINDS = ["api.example.com", "*.cdn.example.org", "10.1.2.3", "192.168.0.0/16", "a-b_c.io", "0.0.0.0/0"]

NEAR_MISSES = (
    "",
    "A.example.com",
    "a.example.com.",
    "a..example.com",
    ".a.example.com",
    "-a.example.com",
    "a-.example.com",
    "a.-example.com",
    "a.example.com:443",
    " a.example.com",
    "a.example.com\nb.example.com",
    "a" * 64 + ".com",
    "a.123",
    "a.b12",
    "bücher.de",
    "*",
    "*.",
    "*x.example.com",
    "*.*.example.com",
    "a.*.example.com",
    "*.-a.com",
    "*.a.12",
    "1.2.3.4:80",
    "1.2.3.04",
    "01.2.3.4",
    "1.2.3",
    "1.2.3.4.5",
    "1.2.3.256",
    "0x1.2.3.4",
    "1.2.3.4/32",
    "1.2.3.4/24",
    "10.0.0.0/08",
    "10.0.0.0/33",
    "10.0.0.0/-1",
    "10.0.0.0/",
    "/8",
    "10.0.0.0/8/8",
    "10.0.0.0/8.0",
    "::1",
    "1.2.3.4",  # canonical, and listed twice below
)


def _per_entry(entries: list[Any], where: ListName) -> tuple[str, ...] | str:
    """Return what the per-entry rule makes of ``entries``: the canonical tuple, or the error code."""
    try:
        return tuple(dict.fromkeys(classify_entry(entry, where)[1] for entry in entries))
    except PolicyError as exc:
        return exc.code


def _agrees(entries: list[Any], where: ListName) -> bool:
    """Tell whether the whole-list path declines ``entries`` or gives what the per-entry rule would, indexes too."""
    bulk = canonical_entries(entries, where)
    if bulk is None:
        return True
    kept, domains, networks = bulk
    if kept != _per_entry(entries, where):
        return False
    slow_domains, slow_networks = _build_indexes(kept)
    return (domains._exact, domains._wildcard, networks._tables) == (
        slow_domains._exact,
        slow_domains._wildcard,
        slow_networks._tables,
    )


def _with(entry: str) -> list[str]:
    return [*FILLER[:100], entry, *KINDS, *FILLER[100:], entry]


def test_a_long_canonical_list_takes_the_whole_list_path() -> None:
    entries = [*FILLER, *KINDS]
    bulk = canonical_entries(entries, "allow_out")
    assert bulk is not None
    assert bulk[0] == tuple(entries)
    assert _agrees(entries, "allow_out")
    assert NetworkConfig(True, tuple(entries))._index is not None  # built with the entries, not on first use


def test_short_lists_and_wildcards_in_deny_out_take_the_per_entry_path() -> None:
    assert canonical_entries(FILLER[: BULK_MIN - 1], "allow_out") is None
    assert canonical_entries([*FILLER, "*.example.com"], "deny_out") is None
    with pytest.raises(PolicyError) as raised:
        NetworkConfig(True, (), (*FILLER, "*.example.com"))
    assert raised.value.code == "wildcard_in_deny"


@pytest.mark.parametrize("where", ["allow_out", "deny_out"])
@pytest.mark.parametrize("entry", NEAR_MISSES)
def test_near_misses_agree_with_the_per_entry_rule(entry: str, where: ListName) -> None:
    assert _agrees(_with(entry), where)


def test_duplicates_keep_the_first_occurrence_and_its_position() -> None:
    entries = _with("1.2.3.4")
    bulk = canonical_entries(entries, "allow_out")
    assert bulk is not None
    assert bulk[0].count("1.2.3.4") == 1
    assert bulk[2].first_match(0x01020304) == 100
    assert _agrees(entries, "allow_out")


def _lenient_hyphens(shape: bytes) -> bool:
    return True


def _lenient_pton(family: int, text: str) -> bytes:
    return socket.inet_aton(text)  # takes 01, 0x1 and 1.2.3 too


#: Plausible wrong whole-list checks, each a patch of one ``_bulk`` name.
WRONG: dict[str, Callable[[], tuple[str, object]]] = {
    "hyphens at label edges pass": lambda: ("_hyphens_inside", _lenient_hyphens),
    "a lenient address parser": lambda: ("_inet_pton", _lenient_pton),
    "a /32 CIDR is kept as written": lambda: ("_PREFIXES", {str(p): p for p in range(33)}),
    "long labels pass": lambda: ("_LONGEST", 1000),
    "uppercase passes": lambda: ("_ALLOWED", {k: v + b"ABCDEFGHIJKLMNOPQRSTUVWXYZ" for k, v in _bulk._ALLOWED.items()}),
    "host bits pass": lambda: ("_HOST_BITS", [0] * 33),
}


@pytest.fixture(params=sorted(WRONG))
def wrong(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name, value = WRONG[request.param]()
    monkeypatch.setattr(_bulk, name, value)
    yield request.param


def test_each_wrong_whole_list_check_is_caught(wrong: str) -> None:
    caught = [entry for entry in NEAR_MISSES if not _agrees(_with(entry), "allow_out")]
    assert caught, f"no near miss catches the wrong check: {wrong}"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(allow_entries(), st.sampled_from(("", "", "", "upper", "dot", "space", "port"))), max_size=12),
    st.lists(deny_entries(), max_size=4),
    st.randoms(use_true_random=False),
)
def test_drawn_lists_agree_with_the_per_entry_rule(
    allow: list[tuple[str, str]], deny: list[str], rng: random.Random
) -> None:
    entries = [decorate(entry, how) for entry, how in allow]
    padded = [*FILLER, *entries]
    rng.shuffle(padded)
    assert _agrees(padded, "allow_out")
    assert _agrees([*FILLER, *deny], "deny_out")


def _ip(value: int) -> str:
    return f"{value >> 24 & 255}.{value >> 16 & 255}.{value >> 8 & 255}.{value & 255}"


def _policy(size: int, rng: random.Random) -> dict[str, Any]:
    """A policy of ``size`` allow_out entries of every kind and a tenth as many deny_out ones, as JSON."""

    def entry(i: int, *, wildcard: bool) -> str:
        kind = i % 4
        if kind == 0:
            return f"svc{i % 50}.team{i % 7}.example{i % 3}.com"
        if kind == 1:
            return f"*.zone{i % 40}.example{i % 3}.com" if wildcard else f"zone{i % 40}.example{i % 3}.com"
        if kind == 2:
            return _ip(rng.choice((0x0A000000, 0xC0A80000)) | rng.randrange(1 << 12))
        prefix = rng.choice((8, 12, 16, 20, 24, 28, 31))
        return f"{_ip(rng.randrange(1 << 32) & ((1 << prefix) - 1) << (32 - prefix))}/{prefix}"

    return {
        "allow_internet_access": rng.random() < 0.5,
        "allow_out": [entry(i, wildcard=True) for i in range(size)],
        "deny_out": [entry(i, wildcard=False) for i in range(size // 10)],
    }


def _probes(rng: random.Random, count: int) -> Iterator[tuple[str | None, str | None]]:
    for _ in range(count):
        host = rng.choice((None, f"svc{rng.randrange(60)}.team{rng.randrange(8)}.example{rng.randrange(4)}.com"))
        if host is None or rng.random() < 0.3:
            host = f"a.zone{rng.randrange(45)}.example{rng.randrange(4)}.com" if host else None
        ip = rng.choice((None, _ip(rng.choice((0x0A000000, 0xC0A80000)) | rng.randrange(1 << 12))))
        if ip is None and host is None:
            ip = _ip(rng.randrange(1 << 32))
        yield host, ip


def test_a_10k_rule_policy_decides_like_the_linear_scan() -> None:
    rng = random.Random(22)
    config = NetworkConfig.from_json(_policy(10_000, rng))
    assert config._index is not None  # the whole-list path built it
    for host, ip in _probes(rng, 100):
        assert decide_egress(config, host=host, ip=ip) == decide_egress_naive(config, host=host, ip=ip)
        if ip is not None:
            assert decide_dns(config, ip) == decide_dns_naive(config, ip)
