"""The admin service's rules: validate each ``/_mock`` call's input and apply it to a :class:`MockCore`.

No HTTP here: :mod:`mockserver.admin.routes` parses a request, calls one function, and renders what it
returns; a refusal is an :class:`ApiError`, and a refused call changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockserver.core.errors import ApiError, json_object
from mockserver.core.faults import FaultError, FaultRule
from mockserver.core.journal import JournalEntry
from mockserver.core.mock import MockCore

__all__ = [
    "add_fault",
    "advance",
    "journal_entry",
    "journal_query",
    "remove_fault",
    "restore",
    "sandboxes",
    "seed",
    "set_clock_mode",
    "set_dns",
]


def restore(core: MockCore, body: Any) -> dict[str, Any]:
    """Replace the whole state with a snapshot; 400 ``invalid_snapshot`` (nothing changed) when it is not one."""
    try:
        core.restore(json_object(body))
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(400, "invalid_snapshot", str(exc)) from exc
    return {"restored": True}


def seed(core: MockCore, body: Any) -> dict[str, Any]:
    """Make ids deterministic: ``{"seed": N}`` (or null for random ids)."""
    value = json_object(body).get("seed")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ApiError(400, "invalid_seed", "seed must be an integer or null")
    core.seed(value)
    return {"seed": value}


def advance(core: MockCore, body: Any) -> dict[str, Any]:
    """Move the virtual clock forward by ``{"seconds": S}`` (S >= 0) and apply what became due."""
    seconds = json_object(body).get("seconds")
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not 0 <= seconds < float("inf"):
        raise ApiError(400, "invalid_seconds", "seconds must be a non-negative number")
    return {"now": core.advance(float(seconds))}


def set_clock_mode(core: MockCore, body: Any) -> dict[str, object]:
    """Switch the clock to ``{"mode": "manual" | "auto" | "wall"}``, keeping the current time."""
    mode: Any = json_object(body).get("mode")
    try:
        core.clock.set_mode(mode)
    except ValueError as exc:
        raise ApiError(400, "invalid_mode", str(exc)) from exc
    return core.clock.dump()


def add_fault(core: MockCore, body: Any) -> dict[str, Any]:
    """Add a fault rule from its JSON form; 400 with the rule's error code when it is malformed."""
    try:
        rule = core.faults.add(FaultRule.from_json(body))
    except FaultError as exc:
        raise ApiError(400, exc.code, str(exc)) from exc
    return rule.to_json()


def remove_fault(core: MockCore, rule_id: int) -> None:
    """Remove one fault rule; 404 ``fault_not_found`` when there is none with that id."""
    if not core.faults.remove(rule_id):
        raise ApiError(404, "fault_not_found", f"no fault rule {rule_id}")


def journal_query(core: MockCore, params: Mapping[str, str]) -> list[JournalEntry]:
    """Return the journal entries matching ``method``, ``path`` (glob), ``sandbox_id``, ``status``, ``since`` and ``limit``.

    ``since=S`` keeps entries numbered after S (poll with the last ``seq`` seen); ``limit=N`` keeps the newest
    N matches (oldest first); 400 ``invalid_query`` on a malformed number.
    """
    status = _number(params, "status")
    limit = _number(params, "limit")
    entries = core.journal.entries(
        method=params.get("method") or None,
        path=params.get("path") or None,
        sandbox_id=params.get("sandbox_id") or None,
        status=status,
        since=_number(params, "since"),
    )
    return entries[-limit:] if limit is not None and limit > 0 else ([] if limit == 0 else entries)


def journal_entry(core: MockCore, seq: int) -> JournalEntry:
    """Return one journal entry; 404 ``entry_not_found`` when the journal no longer holds it."""
    entry = core.journal.get(seq)
    if entry is None:
        raise ApiError(404, "entry_not_found", f"no journal entry {seq}")
    return entry


def sandboxes(core: MockCore) -> dict[str, Any]:
    """Return the provider and its sandbox summaries (see :meth:`MockCore.sandbox_summaries`)."""
    return {"provider": core.provider, "sandboxes": core.sandbox_summaries()}


def _number(params: Mapping[str, str], key: str) -> int | None:
    raw = params.get(key)
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()):
        raise ApiError(400, "invalid_query", f"query parameter {key} must be a non-negative integer")
    return int(raw)


def set_dns(core: MockCore, method: str, body: Any) -> dict[str, object]:
    """Replace (``PUT {"entries", "default"}``) or extend (``POST {name: [addresses]}``) the DNS table."""
    data = json_object(body)
    try:
        if method == "PUT":
            core.dns.replace(data.get("entries", {}), data.get("default"))
        else:
            core.dns.update(data)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ApiError(400, "invalid_dns", f"invalid DNS table: {exc}") from exc
    return core.dns.dump()
