"""Request bodies and query parameters: upper bounds on every number, and huge values refused cleanly."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.core.errors import ApiError
from mockserver.tensorlake.model.validation import LIMITS, int_query, parse_create, parse_patch


def resolve(name: str) -> list[str]:
    """Resolve every name."""
    return ["192.0.2.1"]


@pytest.mark.parametrize(
    "body",
    [
        {"timeout_secs": 10**30},
        {"timeout_secs": LIMITS["timeout_secs"] + 1},
        {"max_pending_secs": 10**20},
        {"resources": {"cpus": 1e300}},
        {"resources": {"cpus": LIMITS["cpus"] + 0.5}},
        {"resources": {"memory_mb": 10**24}},
        {"resources": {"disk_mb": LIMITS["disk_mb"] + 1}},
        {"resources": {"ephemeral_disk_mb": 10**20}},
        {"resources": {"gpus": [{"count": LIMITS["gpu_count"] + 1}]}},
    ],
)
def test_absurd_numbers_are_refused_with_the_bound(body: dict[str, Any]) -> None:
    with pytest.raises(ApiError) as caught:
        parse_create(body, resolve)
    assert (caught.value.status, caught.value.code) == (400, "invalid_value")
    assert "at most" in caught.value.message and len(caught.value.message) < 120


def test_the_bounds_themselves_are_accepted() -> None:
    req = parse_create(
        {
            "timeout_secs": LIMITS["timeout_secs"],
            "max_pending_secs": LIMITS["max_pending_secs"],
            "resources": {"cpus": LIMITS["cpus"], "memory_mb": LIMITS["memory_mb"], "disk_mb": LIMITS["disk_mb"]},
        },
        resolve,
    )
    assert req.given()["timeout_secs"] == LIMITS["timeout_secs"] and req.given()["resources"] is not None


@pytest.mark.parametrize("resources", [{"cpus": 10**6}, {"memory_mb": 10**24}, {"disk_mb": 10**30}])
def test_a_resize_has_the_same_bounds(resources: dict[str, Any]) -> None:
    with pytest.raises(ApiError) as caught:
        parse_patch({"resources": resources}, resolve)
    assert caught.value.code == "invalid_value"


@pytest.mark.parametrize(
    ("raw", "value"),
    [("0", 0), ("00042", 42), (str(LIMITS["wait_ms"]), LIMITS["wait_ms"]), ("0" * 5000 + "7", 7)],
)
def test_int_query_reads_what_is_in_range(raw: str, value: int) -> None:
    assert int_query({"wait_ms": [raw]}, "wait_ms") == value


@pytest.mark.parametrize("raw", ["-1", "1.5", "soon", "\u00b2", "9" * 5000, str(LIMITS["wait_ms"] + 1)])
def test_int_query_refuses_the_rest(raw: str) -> None:
    with pytest.raises(ApiError) as caught:
        int_query({"wait_ms": [raw]}, "wait_ms")
    assert (caught.value.status, caught.value.code) == (400, "invalid_query")


def test_int_query_minimum_and_absence() -> None:
    assert int_query({}, "times", minimum=1) is None
    with pytest.raises(ApiError):
        int_query({"times": ["0"]}, "times", minimum=1)


def test_blank_means_what_the_served_document_s_pattern_means() -> None:
    """``pattern: "\\S"`` is an ECMA-262 pattern: U+001F is not white space there, U+00A0 is."""
    import re as _re

    assert parse_create({"snapshot_id": "\x1f"}, resolve).given()["snapshot_id"] == "\x1f"
    for blank in ("", " ", "\t\u00a0\u3000"):
        with pytest.raises(ApiError) as caught:
            parse_create({"snapshot_id": blank}, resolve)
        assert (caught.value.code, caught.value.message) == ("invalid_value", "snapshot_id must not be empty")
    assert _re.search(r"\S", "\x1f") is None  # Python's own \S disagrees, which is why the rule spells the set out
