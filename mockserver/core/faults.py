"""Fault rules: match a request, then answer a status, delay, drop the connection, or cut a stream."""

from __future__ import annotations

import fnmatch
import itertools
import json
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

FaultAction = Literal["respond", "delay", "drop", "cut_stream", "stall_stream"]
#: Why a rule left the active set: it fired its ``times``, it was removed by id, or every rule was cleared.
FaultEnd = Literal["spent", "removed", "cleared"]
#: How many ended rules a fault set remembers (the oldest are forgotten first).
HISTORY_SIZE = 1000
ACTIONS: tuple[str, ...] = ("respond", "delay", "drop", "cut_stream", "stall_stream")
_KNOWN_KEYS = {
    "method",
    "path",
    "sandbox_id",
    "action",
    "status",
    "body",
    "headers",
    "content_type",
    "delay",
    "delay_phase",
    "times",
    "probability",
    "seed",
    "after_chunks",
    "stall_seconds",
    "name",
}


class FaultError(ValueError):
    """Raise when a fault rule is malformed."""

    def __init__(self, message: str, code: str = "invalid_fault") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class FaultRule:
    """Describe when a fault fires and what it does.

    ``path`` is a glob on the request path (``*`` crosses ``/``). ``sandbox_id`` narrows the rule to
    requests that name that sandbox in the path, the Host header or a sandbox-id header. ``times``
    is how many times it fires (None: forever); ``probability`` draws from a generator seeded by
    ``seed``. ``delay`` (real seconds) is waited ``before`` the app runs or ``after`` it answered
    (so the request takes effect even if the client gave up). ``after_chunks`` is how many response
    body chunks pass before ``cut_stream`` drops the connection or ``stall_stream`` goes silent for
    ``stall_seconds``.

    ``fired`` counts the requests it answered, ``last_fired_at`` is the wall-clock time (epoch seconds) of the
    last one, and ``ended`` says why a rule is no longer active (``None`` while it is).
    """

    method: str = "*"
    path: str = "*"
    sandbox_id: str | None = None
    action: FaultAction = "respond"
    status: int = 500
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    delay: float = 0.0
    delay_phase: Literal["before", "after"] = "before"
    times: int | None = 1
    probability: float = 1.0
    seed: int | None = None
    after_chunks: int = 0
    stall_seconds: float = 30.0
    name: str = ""
    id: int = 0
    fired: int = 0
    last_fired_at: float | None = None
    ended: FaultEnd | None = None
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise FaultError(f"unknown fault action {self.action!r}; expected one of {', '.join(ACTIONS)}")
        if not 100 <= self.status <= 599:
            raise FaultError(f"status {self.status} is not an HTTP status")
        if self.times is not None and self.times < 1:
            raise FaultError("times must be at least 1 (or null for forever)")
        if not 0.0 <= self.probability <= 1.0:
            raise FaultError("probability must be between 0 and 1")
        if self.delay < 0 or self.stall_seconds < 0 or self.after_chunks < 0:
            raise FaultError("delay, stall_seconds and after_chunks must not be negative")
        if self.delay_phase not in ("before", "after"):
            raise FaultError("delay_phase must be 'before' or 'after'")
        self.method = self.method.upper()
        self._rng = random.Random(self.seed)
        if not self.name:
            self.name = self.default_name()

    def default_name(self) -> str:
        """Return the name a rule gets when none is given: ``respond:<status>``, else its action."""
        return f"{self.action}:{self.status}" if self.action == "respond" else self.action

    @property
    def named(self) -> bool:
        """Tell whether the rule was given a name of its own (not :meth:`default_name`)."""
        return self.name not in ("", self.default_name())

    @classmethod
    def from_json(cls, data: Any) -> FaultRule:
        """Build a rule from a JSON object, rejecting unknown keys."""
        if not isinstance(data, dict):
            raise FaultError("a fault rule must be a JSON object")
        unknown = sorted(set(data) - _KNOWN_KEYS)
        if unknown:
            raise FaultError(f"unknown fault rule keys: {', '.join(unknown)}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise FaultError(str(exc)) from exc

    def to_json(self) -> dict[str, Any]:
        """Return the rule as JSON."""
        return {k: getattr(self, k) for k in sorted(_KNOWN_KEYS | {"id", "fired", "last_fired_at", "ended"})}

    def matches(self, method: str, path: str, sandbox_ids: frozenset[str]) -> bool:
        """Tell whether the request is one this rule is about (ignoring times and probability)."""
        return (
            (self.method == "*" or self.method == method.upper())
            and fnmatch.fnmatchcase(path, self.path)
            and (self.sandbox_id is None or self.sandbox_id in sandbox_ids)
        )

    def response_bytes(self) -> tuple[bytes, str]:
        """Return the body to answer and its content type."""
        if self.body is None:
            payload: bytes = b""
            ctype = self.content_type or "text/plain"
        elif isinstance(self.body, str):
            payload = self.body.encode()
            ctype = self.content_type or "text/plain; charset=utf-8"
        else:
            payload = json.dumps(self.body).encode()
            ctype = self.content_type or "application/json"
        return payload, ctype


class FaultSet:
    """Hold the active fault rules, and the last :data:`HISTORY_SIZE` ended ones; thread-safe."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._ended: deque[FaultRule] = deque(maxlen=HISTORY_SIZE)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _end(self, rule: FaultRule, why: FaultEnd) -> None:
        """Move ``rule`` to the history (the lock is held)."""
        rule.ended = why
        self._ended.append(rule)

    def add(self, rule: FaultRule | None = None, **kwargs: Any) -> FaultRule:
        """Add a rule (or build one from keyword arguments) and return it with its id."""
        if rule is None:
            rule = FaultRule.from_json(kwargs)
        with self._lock:
            rule.id = next(self._ids)
            self._rules.append(rule)
        return rule

    def respond(
        self,
        method: str,
        path: str,
        status: int,
        body: Any = None,
        *,
        sandbox_id: str | None = None,
        times: int | None = 1,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
        name: str = "",
    ) -> FaultRule:
        """Add a rule that answers matching requests with ``status`` and ``body`` instead of the mock's answer."""
        return self.add(
            FaultRule(
                method=method,
                path=path,
                status=status,
                body=body,
                sandbox_id=sandbox_id,
                times=times,
                headers=dict(headers or {}),
                content_type=content_type,
                name=name,
            )
        )

    def remove(self, rule_id: int) -> bool:
        """Remove a rule by id; return whether it existed."""
        with self._lock:
            gone = [r for r in self._rules if r.id == rule_id]
            for rule in gone:
                self._rules.remove(rule)
                self._end(rule, "removed")
            return bool(gone)

    def clear(self) -> None:
        """Remove every rule (each is kept in the history as ``cleared``)."""
        with self._lock:
            for rule in self._rules:
                self._end(rule, "cleared")
            self._rules.clear()

    def reset(self) -> None:
        """Forget every rule, active or ended."""
        with self._lock:
            self._rules.clear()
            self._ended.clear()

    def rules(self) -> list[FaultRule]:
        """Return the active rules."""
        with self._lock:
            return list(self._rules)

    def history(self) -> list[FaultRule]:
        """Return every rule this set remembers, active and ended, in the order they were added."""
        with self._lock:
            return sorted([*self._ended, *self._rules], key=lambda r: r.id)

    def __bool__(self) -> bool:
        """Tell whether any rule is active (read without the lock: a cheap test on every request)."""
        return bool(self._rules)

    def take(
        self, method: str, path: str, sandbox_ids: frozenset[str] | Callable[[], frozenset[str]]
    ) -> FaultRule | None:
        """Return the first rule that fires for this request, spending one of its ``times``.

        ``sandbox_ids`` may be a callable, computed only when a rule narrowed to a sandbox needs it.
        """
        if not self._rules:
            return None
        if callable(sandbox_ids) and any(r.sandbox_id is not None for r in self.rules()):
            sandbox_ids = sandbox_ids()
        elif callable(sandbox_ids):
            sandbox_ids = frozenset()
        with self._lock:
            for rule in self._rules:
                if not rule.matches(method, path, sandbox_ids):
                    continue
                if rule.probability < 1.0 and rule._rng.random() >= rule.probability:
                    continue
                rule.fired += 1
                rule.last_fired_at = time.time()
                if rule.times is not None and rule.fired >= rule.times:
                    self._rules.remove(rule)
                    self._end(rule, "spent")
                return rule
        return None
