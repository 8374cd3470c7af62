"""Query-string parsing of the listings: page and pageSize bounds, metadata filters, repeated values."""

from __future__ import annotations

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model.query import metadata_filter, page_of, query_last, query_values
from mockserver.opensandbox.model.validation import RequestValidationError


def test_defaults_and_values() -> None:
    assert page_of([]) == page_of([("other", "1")])
    assert (page_of([]).page, page_of([]).size) == (1, 20)
    assert page_of([("page", "3"), ("pageSize", "200")]).size == 200
    assert page_of([("page", "1"), ("page", "2")]).page == 2  # the last value wins


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ([("page", "0")], "greater_than_equal"),
        ([("page", "x")], "int_parsing"),
        ([("pageSize", "201")], "less_than_equal"),
        ([("pageSize", "-1")], "greater_than_equal"),
    ],
)
def test_bad_pages_are_422(query: list[tuple[str, str]], kind: str) -> None:
    with pytest.raises(RequestValidationError) as caught:
        page_of(query)
    assert [e["type"] for e in caught.value.errors] == [kind]
    assert caught.value.errors[0]["loc"] == ["query", query[0][0]]


def test_both_bad_parameters_are_reported_together() -> None:
    with pytest.raises(RequestValidationError) as caught:
        page_of([("page", "0"), ("pageSize", "9999")])
    assert len(caught.value.errors) == 2


def test_metadata_filter() -> None:
    assert metadata_filter([]) == {} and metadata_filter([("metadata", "")]) == {}
    assert metadata_filter([("metadata", "team=a&tier=")]) == {"team": "a", "tier": ""}
    with pytest.raises(ApiError) as caught:
        metadata_filter([("metadata", "team")])
    assert (caught.value.status, caught.value.code) == (400, "INVALID_METADATA_FORMAT")


def test_lists_and_last_values() -> None:
    query = [("state", "Running"), ("x", "1"), ("state", "paused")]
    assert query_values(query, "state") == ["Running", "paused"]
    assert query_last(query, "state") == "paused" and query_last(query, "missing") is None
