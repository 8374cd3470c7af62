"""Request programs for the differential runner: steps against the OpenSandbox lifecycle API, valid or not."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

__all__ = ["Auth", "Program", "RelTime", "Step", "TimeStyle", "compact"]

Auth = Literal["ok", "missing", "wrong"]
TimeStyle = Literal["Z", "offset", "naive", "plus2"]


def compact(value: Any) -> str:
    """Render a value as compact JSON."""
    return json.dumps(value, default=repr, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class RelTime:
    """A time `seconds` after the step's sandbox was created (or after now), rendered on each side."""

    seconds: float
    style: TimeStyle = "offset"

    def render(self, anchor: datetime) -> tuple[str, datetime]:
        """Return the text to send and the instant it means."""
        when = anchor + timedelta(seconds=self.seconds)
        if self.style == "Z":
            return when.isoformat().replace("+00:00", "Z"), when
        if self.style == "naive":
            return when.replace(tzinfo=None).isoformat(), when
        if self.style == "plus2":
            return when.astimezone(timezone(timedelta(hours=2))).isoformat(), when
        return when.isoformat(), when


_PATHS = {
    "create": ("POST", ""),
    "list": ("GET", ""),
    "get": ("GET", "/{id}"),
    "delete": ("DELETE", "/{id}"),
    "pause": ("POST", "/{id}/pause"),
    "resume": ("POST", "/{id}/resume"),
    "renew": ("POST", "/{id}/renew-expiration"),
    "endpoint": ("GET", "/{id}/endpoints/{port}"),
    "policy-get": ("GET", "/{id}/networkpolicy"),
    "policy-put": ("PUT", "/{id}/networkpolicy"),
    "policy-patch": ("PATCH", "/{id}/networkpolicy"),
    "policy-delete": ("DELETE", "/{id}/networkpolicy"),
}


@dataclass(frozen=True)
class Step:
    """One request of a program.

    `sandbox` is a create slot: N means "the sandbox made by the program's N-th create step". A slot
    without a sandbox on both sides (0, a failed create, a later create) stands for an id that never existed.
    `body` is JSON (with :class:`RelTime` values resolved per side); `raw` sends bytes instead; with
    neither, no body is sent. `variant` names the input class; deviations match on ``operation:variant``.
    """

    operation: str
    variant: str = "valid"
    sandbox: int | None = None
    body: Any = None
    raw: bytes | None = None
    content_type: str | None = "application/json"
    params: tuple[tuple[str, str], ...] = ()
    port: str = "44772"
    auth: Auth = "ok"
    prefix: str = "/v1"
    request_id: str | None = None

    def __post_init__(self) -> None:
        if self.operation not in _PATHS:
            raise ValueError(f"unknown operation {self.operation!r}: expected one of {sorted(_PATHS)}")
        if self.operation not in ("create", "list") and self.sandbox is None:
            raise ValueError(f"{self.operation} needs a sandbox slot")

    @property
    def key(self) -> str:
        """Return the ``operation:variant`` key deviations match on."""
        return f"{self.operation}:{self.variant}"

    @property
    def method(self) -> str:
        """Return the HTTP method."""
        return _PATHS[self.operation][0]

    def path(self, sandbox_id: str = "{id}") -> str:
        """Return the request path for `sandbox_id`."""
        suffix = _PATHS[self.operation][1].format(id=sandbox_id, port=self.port)
        return f"{self.prefix}/sandboxes{suffix}"

    def describe(self) -> str:
        """Return a one-line, reproducible description of the step."""
        parts = [f"{self.key:<28}", self.method, self.path(f"<sandbox#{self.sandbox}>")]
        if self.params:
            parts.append("?" + "&".join(f"{k}={v}" for k, v in self.params))
        if self.raw is not None:
            parts.append(f"raw={self.raw!r}")
        elif self.body is not None:
            parts.append(compact(self.body))
        if self.content_type != "application/json" and (self.raw is not None or self.body is not None):
            parts.append(f"content-type={self.content_type}")
        if self.auth != "ok":
            parts.append(f"[auth {self.auth}]")
        if self.request_id:
            parts.append(f"[X-Request-ID {self.request_id}]")
        return " ".join(parts)


@dataclass(frozen=True)
class Program:
    """A named request sequence."""

    name: str
    steps: tuple[Step, ...]

    def describe(self) -> str:
        """Return the program as numbered lines."""
        return "\n".join([f"program {self.name!r}:"] + [f"  {i}. {s.describe()}" for i, s in enumerate(self.steps, 1)])
