"""Query-string rules of the lifecycle API, read as FastAPI reads them: pairs in, values or 422 entries out.

A query is the request's ``(name, value)`` pairs in order (``request.query_params.multi_items()`` in a
route, a list of tuples in the contract oracle). A scalar parameter takes the **last** value given, as
Starlette's ``QueryParams.get`` (and so FastAPI) does; a list parameter takes every value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl

from mockserver.core import ApiError

from .spec import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from .validation import Checker

__all__ = ["Page", "Query", "metadata_filter", "page_of", "query_bool", "query_int", "query_last", "query_values"]

Query = Sequence[tuple[str, str]]


def query_last(query: Query, name: str) -> str | None:
    """Return the last value of ``name``, or None when it is absent."""
    found: str | None = None
    for key, value in query:
        if key == name:
            found = value
    return found


def query_values(query: Query, name: str) -> list[str]:
    """Return every value of ``name`` in order."""
    return [value for key, value in query if key == name]


def query_int(check: Checker, query: Query, name: str, default: int, *, le: int | None = None) -> int:
    """Return an integer parameter ``>= 1`` (and ``<= le``), recording a pydantic error when it is not one."""
    raw = query_last(query, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        check.add("int_parsing", ["query", name], raw)
        return default
    if value < 1:
        check.add("greater_than_equal", ["query", name], raw, "Input should be greater than or equal to 1", ge=1)
    elif le is not None and value > le:
        check.add("less_than_equal", ["query", name], raw, f"Input should be less than or equal to {le}", le=le)
    return value


def query_bool(check: Checker, query: Query, name: str) -> bool:
    """Return a boolean parameter (absent: False) under pydantic's lax spellings, recording an error otherwise."""
    raw = query_last(query, name)
    if raw is None:
        return False
    return bool(check.boolean(raw, ["query", name]))


@dataclass(frozen=True)
class Page:
    """Which page of a listing was asked for."""

    page: int
    size: int


def page_of(query: Query) -> Page:
    """Return the ``page``/``pageSize`` of a listing query, or raise the 422 FastAPI gives for bad ones."""
    check = Checker()
    page = query_int(check, query, "page", 1)
    size = query_int(check, query, "pageSize", DEFAULT_PAGE_SIZE, le=MAX_PAGE_SIZE)
    check.raise_if_any()
    return Page(page, size)


def metadata_filter(query: Query) -> dict[str, str]:
    """Return the ``metadata`` filter (``k=v&k2=v2``) as a dict; 400 ``INVALID_METADATA_FORMAT`` when malformed."""
    raw = query_last(query, "metadata")
    if not raw:
        return {}
    try:
        return dict(parse_qsl(raw, keep_blank_values=True, strict_parsing=True))
    except ValueError as exc:
        raise ApiError(400, "INVALID_METADATA_FORMAT", f"Invalid metadata format: {exc}") from exc
