"""The create body's ``lifecycle`` hooks as the real server's body model checks them (422), field by field.

``SandboxLifecycle`` (``preStart``: a ``LifecycleHook``; ``periodic``: a list of ``PeriodicLifecycleHook``) and
both hook models forbid unknown keys and accept each field by its alias or its Python name (``populate_by_name``).
pydantic reports a model's field errors in field order, then its unknown keys; a model's own validator runs
only when its fields passed, and reports a ``value_error`` at the model's place among the outer model's errors.
The Docker runtime then refuses any ``lifecycle`` with 400 (:func:`.spec.parse_create`).
"""

from __future__ import annotations

from typing import Any

from .validation import Checker, value_error_entry

__all__ = ["check_lifecycle"]

#: Each model's fields: (alias, Python name).
_LIFECYCLE_FIELDS = (("preStart", "pre_start"), ("periodic", "periodic"))
_HOOK_FIELDS = (("command", "command"), ("timeoutSeconds", "timeout_seconds"))
_PERIODIC_FIELDS = (
    ("name", "name"),
    ("schedule", "schedule"),
    ("command", "command"),
    ("timeoutSeconds", "timeout_seconds"),
)


def _field(data: dict[str, Any], names: tuple[str, str]) -> tuple[bool, Any]:
    """Return whether the field is given (by alias first, then by name) and its value."""
    for name in names:
        if name in data:
            return True, data[name]
    return False, None


def _forbid_extra(
    check: Checker, data: dict[str, Any], fields: tuple[tuple[str, str], ...], loc: list[str | int]
) -> None:
    """Record ``extra_forbidden`` for every key no field took (a field given by alias leaves its name extra)."""
    taken = {next((name for name in pair if name in data), None) for pair in fields}
    for key, value in data.items():
        if key not in taken:
            check.add("extra_forbidden", [*loc, key], value, "Extra inputs are not permitted")


def _timeout(check: Checker, data: dict[str, Any], loc: list[str | int], le: int) -> None:
    """Check an optional ``timeoutSeconds`` in ``1..le``."""
    given, value = _field(data, ("timeoutSeconds", "timeout_seconds"))
    if not given or value is None:
        return
    seconds = check.integer(value, [*loc, "timeoutSeconds"], ge=1)
    if seconds is not None and seconds > le:
        check.add(
            "less_than_equal", [*loc, "timeoutSeconds"], value, f"Input should be less than or equal to {le}", le=le
        )


def _command(check: Checker, data: dict[str, Any], loc: list[str | int]) -> list[str] | None:
    """Check a required, non-empty ``command`` list of strings."""
    given, value = _field(data, ("command", "command"))
    if not given:
        check.add("missing", [*loc, "command"], data)
        return None
    return check.str_list(value, [*loc, "command"], min_items=1)


def _hook(check: Checker, value: Any, loc: list[str | int]) -> None:
    """Check a ``LifecycleHook``: ``command``, ``timeoutSeconds`` (<= 10800), no other key; then its validator."""
    if (data := check.obj(value, loc)) is None:
        return
    before = len(check.errors)
    command = _command(check, data, loc)
    _timeout(check, data, loc, 10800)
    _forbid_extra(check, data, _HOOK_FIELDS, loc)
    if len(check.errors) == before and command is not None and not command[0].strip():
        check.errors.append(value_error_entry(data, "Lifecycle hook command must not be empty.", loc))


def _periodic_hook(check: Checker, value: Any, loc: list[str | int]) -> str | None:
    """Check a ``PeriodicLifecycleHook``; return its stripped name when it is valid."""
    if (data := check.obj(value, loc)) is None:
        return None
    before = len(check.errors)
    texts: dict[str, str | None] = {}
    for key in ("name", "schedule"):
        given, text = _field(data, (key, key))
        if not given:
            check.add("missing", [*loc, key], data)
            texts[key] = None
        else:
            texts[key] = check.string(text, [*loc, key], min_length=1)
    command = _command(check, data, loc)
    _timeout(check, data, loc, 300)
    _forbid_extra(check, data, _PERIODIC_FIELDS, loc)
    if len(check.errors) != before or command is None:
        return None
    name, schedule = (texts["name"] or "").strip(), (texts["schedule"] or "").strip()
    problem = (
        "Periodic lifecycle hook name must not be blank."
        if not name
        else "Periodic lifecycle hook schedule must not be blank."
        if not schedule
        else "Periodic lifecycle hook command must not be empty."
        if not command[0].strip()
        else None
    )
    if problem is not None:
        check.errors.append(value_error_entry(data, problem, loc))
        return None
    return name


def check_lifecycle(check: Checker, value: Any, loc: list[str | int]) -> None:
    """Record the ``SandboxLifecycle`` model's errors for a ``lifecycle`` value at ``loc`` (None is allowed)."""
    if value is None or (data := check.obj(value, loc)) is None:
        return
    before = len(check.errors)
    given, pre_start = _field(data, ("preStart", "pre_start"))
    if given and pre_start is not None:
        _hook(check, pre_start, [*loc, "preStart"])
    names: list[str] = []
    given, periodic = _field(data, ("periodic", "periodic"))
    if given and periodic is not None:
        if not isinstance(periodic, list):
            check.add("list_type", [*loc, "periodic"], periodic)
        else:
            for i, hook in enumerate(periodic):
                name = _periodic_hook(check, hook, [*loc, "periodic", i])
                if name is not None:
                    names.append(name)
    _forbid_extra(check, data, _LIFECYCLE_FIELDS, loc)
    if len(check.errors) == before and len(names) != len(set(names)):
        check.errors.append(value_error_entry(data, "Periodic lifecycle hook names must be unique.", loc))
