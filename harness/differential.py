"""Differential fidelity runner: replay one request program against the real server and a candidate.

A :class:`Program` is a sequence of :class:`Step` s against the OpenSandbox lifecycle API (create, get,
list, renew, pause, resume, delete, endpoint), valid or not. :class:`DifferentialRunner` sends every step
to both sides and compares normalised replies:

* the status code (a status mismatch is one difference; bodies are shown, not diffed);
* the headers ``content-type`` (media type only), ``x-request-id`` (echoed or 32 hex digits) and ``vary``;
* the JSON body, recursively: missing or extra keys, value types and values.

Normalisation makes the two sides comparable:

* sandbox ids become ``<sandbox#N>`` where N is the create step that made them, on each side, so later
  steps naming "sandbox #N" hit the right id on each side; other UUIDs become ``<foreign-id>``;
* timestamps must be RFC 3339 and become placeholders that keep their format (``sZ`` whole seconds,
  ``f6Z`` microseconds, ...): a time we sent is ``<requested@K>``, a time a whole number of seconds
  from the sandbox's create-reply ``createdAt`` is ``<created#N+600s>`` (so ``expiresAt`` is compared
  relative to ``createdAt``), one within a few seconds of it is ``<created#N~>``, and
  ``status.lastTransitionAt`` equal to the object's ``createdAt`` is ``<same-as-createdAt>``;
* ``127.0.0.1:<port>`` becomes ``<server>`` (the side's own port) or ``<host-port>``.

If a create succeeds on one side only, the runner deletes that orphan and both sides treat the slot as a
sandbox that never existed, so one divergent create does not cascade. Each step yields a
:class:`Comparison`; a :class:`Difference` not covered by a :class:`~harness.deviations.Deviation` is a
divergence. Relative times (:class:`RelTime`) assume the candidate's clock follows the wall clock.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
from hypothesis import strategies as st

from harness.deviations import KNOWN_DEVIATIONS, OPEN_FINDINGS, Deviation, covering

__all__ = [
    "ABSENT",
    "BASE_CREATE",
    "CANONICAL_PROGRAMS",
    "DROP",
    "INVALID_CREATES",
    "Comparison",
    "Difference",
    "DifferentialRunner",
    "Observed",
    "Program",
    "ProgramResult",
    "RelTime",
    "Side",
    "Step",
    "create",
    "create_body",
    "diff",
    "difference_values",
    "programs",
    "report",
    "steps",
]

API_KEY_HEADER = "OPEN-SANDBOX-API-KEY"
WRONG_KEY = "sandproof-wrong-key"
ABSENT = "<absent>"
Auth = Literal["ok", "missing", "wrong"]
TimeStyle = Literal["Z", "offset", "naive", "plus2"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HOST_PORT = re.compile(r"\b(?:127\.0\.0\.1|localhost):(\d+)")
_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?P<frac>\.\d+)?(?P<tz>Z|[+-]\d{2}:\d{2})?$", re.IGNORECASE
)
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_NEAR_SECONDS = 5.0
_EXACT_SECONDS = 0.001
_SHOW = 400


# -- programs ----------------------------------------------------------------------------------------


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
            parts.append(_compact(self.body))
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


# -- outcomes ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One server under comparison: a base URL (without ``/v1``) and its API key."""

    name: str
    url: str
    api_key: str | None

    @property
    def port(self) -> int | None:
        """Return the URL's port."""
        return urlsplit(self.url).port


@dataclass(frozen=True)
class Observed:
    """One side's normalised reply to a step (status 0 means the connection failed)."""

    status: int
    headers: Mapping[str, str]
    body: Any
    request: str
    raw: str


@dataclass(frozen=True)
class Difference:
    """One place where the normalised replies differ, and the deviation that covers it if any."""

    path: str
    real: Any
    candidate: Any
    deviation: Deviation | None = None

    def describe(self) -> str:
        """Return ``path: real X != candidate Y`` plus the covering deviation."""
        text = f"{self.path}: real {_compact(self.real)} != candidate {_compact(self.candidate)}"
        if self.deviation is not None:
            tag = self.deviation.finding or "known deviation"
            text += f"  [{tag}: {self.deviation.operation} / {self.deviation.field_or_aspect}]"
        return text


@dataclass(frozen=True)
class Comparison:
    """The outcome of one step: both normalised replies and every difference between them."""

    step: Step
    real: Observed
    candidate: Observed
    differences: tuple[Difference, ...]
    index: int = 0
    key: str = ""

    @property
    def unlisted(self) -> tuple[Difference, ...]:
        """Return the differences no deviation covers."""
        return tuple(d for d in self.differences if d.deviation is None)

    @property
    def ok(self) -> bool:
        """Return whether every difference is covered."""
        return not self.unlisted

    def report(self, *, covered: bool = False) -> str:
        """Return a readable diff of this step (only unlisted differences unless `covered`)."""
        shown = self.differences if covered else self.unlisted
        lines = [
            f"step {self.index}: {self.step.describe()}"
            + (" (no such sandbox)" if self.key.endswith("@missing") else "")
        ]
        lines += [f"    - {d.describe()}" for d in shown]
        for label, seen in (("real", self.real), ("candidate", self.candidate)):
            lines.append(f"      {label:<9} {seen.request} -> {seen.status} {_clip(seen.raw)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ProgramResult:
    """Every comparison of one program run."""

    program: Program
    comparisons: tuple[Comparison, ...]

    @property
    def divergences(self) -> tuple[Comparison, ...]:
        """Return the comparisons with unlisted differences."""
        return tuple(c for c in self.comparisons if not c.ok)

    @property
    def ok(self) -> bool:
        """Return whether no step diverged."""
        return not self.divergences

    def report(self, *, covered: bool = False) -> str:
        """Return the program and a readable diff of its divergent steps."""
        chosen = [c for c in self.comparisons if (c.differences if covered else c.unlisted)]
        return "\n".join([self.program.describe(), *(c.report(covered=covered) for c in chosen)])


def report(results: Iterable[ProgramResult]) -> str:
    """Return the readable diff of every divergent program."""
    return "\n\n".join(r.report() for r in results if not r.ok)


# -- normalisation -----------------------------------------------------------------------------------


def _compact(value: Any) -> str:
    """Render a value as compact JSON."""
    return json.dumps(value, default=repr, separators=(",", ":"), ensure_ascii=False)


def _clip(text: str) -> str:
    """Shorten long text for reports."""
    text = text.replace("\n", " ")
    return text if len(text) <= _SHOW else text[:_SHOW] + "..."


def parse_time(text: str) -> datetime | None:
    """Parse RFC 3339 or ISO date text (naive counts as UTC), or return None."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


@dataclass
class _Session:
    """One side's view of one program run: the client and the ids, anchors and times it has seen."""

    side: Side
    client: httpx.Client
    ids: dict[int, str] = field(default_factory=dict)
    slots: dict[str, int] = field(default_factory=dict)
    anchors: dict[str, datetime] = field(default_factory=dict)
    requested: dict[str, datetime] = field(default_factory=dict)

    def sandbox_id(self, slot: int | None) -> str:
        """Return the id behind a slot, or a never-existing id."""
        if slot is None:
            return ""
        return self.ids.get(slot) or f"sandproof-missing-{slot}"

    def register(self, slot: int, sandbox_id: str, created_at: Any) -> None:
        """Remember the sandbox a create slot made and its create-reply `createdAt`."""
        self.ids[slot] = sandbox_id
        self.slots[sandbox_id] = slot
        when = parse_time(created_at) if isinstance(created_at, str) else None
        self.anchors[f"created#{slot}"] = when or datetime.now(UTC)

    def headers(self, step: Step) -> dict[str, str]:
        """Return the request headers for a step."""
        headers: dict[str, str] = {}
        if step.auth == "ok" and self.side.api_key:
            headers[API_KEY_HEADER] = self.side.api_key
        elif step.auth == "wrong":
            headers[API_KEY_HEADER] = WRONG_KEY
        if step.request_id:
            headers["X-Request-ID"] = step.request_id
        return headers

    def resolve(self, value: Any, step: Step, index: int, key: str = "") -> Any:
        """Resolve :class:`RelTime` values and record every time the request names."""
        if isinstance(value, RelTime):
            anchor = self.anchors.get(f"created#{step.sandbox}") or datetime.now(UTC)
            text, when = value.render(anchor)
            self.requested[f"requested@{index}"] = when
            return text
        if isinstance(value, dict):
            return {k: self.resolve(v, step, index, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, step, index) for v in value]
        if key == "expiresAt":
            sent = parse_time(value) if isinstance(value, str) else None
            if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e11:
                sent = datetime.fromtimestamp(value, UTC)
            if sent is not None:
                self.requested[f"requested@{index}"] = sent
        return value

    def send(self, step: Step, index: int) -> tuple[str, httpx.Response | Exception]:
        """Send a step; return the request line and the response or the transport error."""
        headers = self.headers(step)
        content: bytes | None = step.raw
        if content is None and step.body is not None:
            content = json.dumps(self.resolve(step.body, step, index)).encode()
        if content is not None and step.content_type:
            headers["content-type"] = step.content_type
        path = step.path(self.sandbox_id(step.sandbox))
        line = f"{step.method} {path}" + ("?" + "&".join(f"{k}={v}" for k, v in step.params) if step.params else "")
        try:
            response = self.client.request(
                step.method, self.side.url + path, params=list(step.params), content=content, headers=headers
            )
        except httpx.HTTPError as exc:
            return line, exc
        return line, response

    def observe(self, step: Step, line: str, outcome: httpx.Response | Exception) -> Observed:
        """Normalise a reply."""
        if isinstance(outcome, Exception):
            text = f"{type(outcome).__name__}: {outcome}"
            return Observed(0, {}, f"<transport error {type(outcome).__name__}>", line, text)
        media = outcome.headers.get("content-type")
        headers = {
            "content-type": media.split(";")[0].strip().lower() if media else ABSENT,
            "x-request-id": _request_id_shape(outcome.headers.get("x-request-id"), step.request_id),
            "vary": outcome.headers.get("vary", ABSENT),
        }
        body: Any = None
        if outcome.content:
            try:
                body = json.loads(outcome.content)
            except ValueError:
                body = "<non-json> " + outcome.text[:200]
        context = f"created#{step.sandbox}" if step.sandbox in self.ids else None
        return Observed(outcome.status_code, headers, self.normalise(body, context), line, outcome.text)

    def normalise(self, value: Any, context: str | None) -> Any:
        """Replace ids, ports and timestamps in a JSON value with placeholders."""
        if isinstance(value, dict):
            own = value.get("id")
            if isinstance(own, str) and own in self.slots:
                context = f"created#{self.slots[own]}"
            value = _mark_transition(value)
            return {k: self.normalise(v, context) for k, v in value.items()}
        if isinstance(value, list):
            return [self.normalise(v, context) for v in value]
        if isinstance(value, str):
            return self.normalise_text(value, context)
        return value

    def normalise_text(self, text: str, context: str | None) -> str:
        """Normalise one string."""
        if _TIMESTAMP.match(text):
            return self.normalise_time(text, context)
        for sandbox_id, slot in self.slots.items():
            text = text.replace(sandbox_id, f"<sandbox#{slot}>")
        text = _UUID.sub("<foreign-id>", text)
        return _HOST_PORT.sub(lambda m: "<server>" if int(m[1]) == self.side.port else "<host-port>", text)

    def normalise_time(self, text: str, context: str | None) -> str:
        """Turn a timestamp into a placeholder naming its anchor and its format."""
        match = _TIMESTAMP.match(text)
        assert match is not None
        frac, tz = match["frac"], match["tz"]
        shape = ("s" if not frac else f"f{len(frac) - 1}") + (tz.upper() if tz else "-naive")
        when = parse_time(text)
        if when is None:
            return f"<bad-timestamp {text}>"
        for label, requested in self.requested.items():
            if when == requested:
                return f"<{label}|{shape}>"
        labels = [context] if context in self.anchors else list(self.anchors)
        for label in labels:
            delta = (when - self.anchors[label]).total_seconds()
            whole = round(delta)
            if whole and abs(delta - whole) < _EXACT_SECONDS:
                return f"<{label}{whole:+d}s|{shape}>"
        for label in labels:
            if abs((when - self.anchors[label]).total_seconds()) < _NEAR_SECONDS:
                return f"<{label}~|{shape}>"
        return f"<timestamp|{shape}>"

    def delete(self, sandbox_id: str) -> None:
        """Delete a sandbox without comparing (errors ignored)."""
        key = {API_KEY_HEADER: self.side.api_key} if self.side.api_key else {}
        with contextlib.suppress(httpx.HTTPError):
            self.client.delete(f"{self.side.url}/v1/sandboxes/{sandbox_id}", headers=key)

    def cleanup(self) -> None:
        """Delete every sandbox this run made."""
        for sandbox_id in self.ids.values():
            self.delete(sandbox_id)


def _mark_transition(value: dict[str, Any]) -> dict[str, Any]:
    """Replace `status.lastTransitionAt` by a marker when it equals the object's `createdAt`."""
    status = value.get("status")
    created = value.get("createdAt")
    if isinstance(status, dict) and isinstance(created, str) and status.get("lastTransitionAt") == created:
        return {**value, "status": {**status, "lastTransitionAt": "<same-as-createdAt>"}}
    return value


def _request_id_shape(value: str | None, sent: str | None) -> str:
    """Return how a reply's `x-request-id` relates to the request."""
    if value is None:
        return ABSENT
    if sent is not None:
        return "<echoed>" if value == sent else f"<not echoed: {value}>"
    return "<hex32>" if _HEX32.match(value) else f"<other: {value}>"


def _created(outcome: httpx.Response | Exception) -> tuple[str, Any] | None:
    """Return the id and `createdAt` of a successful create reply."""
    if isinstance(outcome, Exception) or not 200 <= outcome.status_code < 300:
        return None
    try:
        body = outcome.json()
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("id"), str):
        return body["id"], body.get("createdAt")
    return None


def difference_values(real: Any, candidate: Any) -> str:
    """Return the ``<real> -> <candidate>`` text a deviation's `values` pattern matches."""
    return f"{_compact(real)} -> {_compact(candidate)}"


def diff(real: Observed, candidate: Observed) -> list[tuple[str, Any, Any]]:
    """Return ``(path, real, candidate)`` for every place the normalised replies differ."""
    if real.status != candidate.status:
        return [("status", real.status, candidate.status)]
    out: list[tuple[str, Any, Any]] = []
    for name in sorted(set(real.headers) | set(candidate.headers)):
        a, b = real.headers.get(name, ABSENT), candidate.headers.get(name, ABSENT)
        if a != b:
            out.append((f"header.{name}", a, b))
    _diff("body", real.body, candidate.body, out)
    return out


def _diff(path: str, a: Any, b: Any, out: list[tuple[str, Any, Any]]) -> None:
    """Collect differences between two JSON values: keys, types, lengths and leaf values."""
    if type(a) is not type(b):
        out.append((path, a, b))
    elif isinstance(a, dict):
        for key in a:
            if key not in b:
                out.append((f"{path}.{key}", a[key], ABSENT))
            else:
                _diff(f"{path}.{key}", a[key], b[key], out)
        out.extend((f"{path}.{key}", ABSENT, b[key]) for key in b if key not in a)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append((f"{path}.length", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _diff(f"{path}.{i}", x, y, out)
    elif a != b:
        out.append((path, a, b))


# -- the runner --------------------------------------------------------------------------------------


class DifferentialRunner:
    """Send programs to a real server and a candidate and compare the normalised replies.

    `deviations` defaults to the known deviations plus the open findings of :mod:`harness.deviations`.
    """

    def __init__(
        self,
        real: Side,
        candidate: Side,
        *,
        deviations: Sequence[Deviation] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.real = real
        self.candidate = candidate
        self.deviations = tuple(KNOWN_DEVIATIONS + OPEN_FINDINGS if deviations is None else deviations)
        self._clients = (
            httpx.Client(trust_env=False, timeout=timeout),
            httpx.Client(trust_env=False, timeout=timeout),
        )

    def close(self) -> None:
        """Close both HTTP clients."""
        for client in self._clients:
            client.close()

    def __enter__(self) -> DifferentialRunner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def run(self, program: Program) -> ProgramResult:
        """Run one program on both sides, then delete what it created."""
        real = _Session(self.real, self._clients[0])
        candidate = _Session(self.candidate, self._clients[1])
        comparisons: list[Comparison] = []
        slots = 0
        try:
            for index, step in enumerate(program.steps, 1):
                slot = 0
                if step.operation == "create":
                    slots += 1
                    slot = slots
                comparisons.append(self._step(index, step, slot, real, candidate))
        finally:
            real.cleanup()
            candidate.cleanup()
        return ProgramResult(program, tuple(comparisons))

    def run_all(self, programs: Iterable[Program]) -> list[ProgramResult]:
        """Run several programs."""
        return [self.run(p) for p in programs]

    def _step(self, index: int, step: Step, slot: int, real: _Session, candidate: _Session) -> Comparison:
        """Send one step to both sides and compare."""
        real_line, real_out = real.send(step, index)
        cand_line, cand_out = candidate.send(step, index)
        if step.operation == "create":
            made = (_created(real_out), _created(cand_out))
            if made[0] and made[1]:
                real.register(slot, *made[0])
                candidate.register(slot, *made[1])
            else:
                for session, one in zip((real, candidate), made, strict=True):
                    if one:
                        session.delete(one[0])
        observed = (real.observe(step, real_line, real_out), candidate.observe(step, cand_line, cand_out))
        resolved = step.sandbox is None or (step.sandbox in real.ids and step.sandbox in candidate.ids)
        key = step.key if resolved else f"{step.key}@missing"
        differences = tuple(
            Difference(path, a, b, covering(key, path, difference_values(a, b), self.deviations))
            for path, a, b in diff(*observed)
        )
        return Comparison(step, observed[0], observed[1], differences, index, key)


# -- canonical programs ------------------------------------------------------------------------------

DROP = object()
BASE_CREATE: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
    "entrypoint": ["tail", "-f", "/dev/null"],
}


def create_body(**fields: Any) -> dict[str, Any]:
    """Return the SDK's default create body with `fields` changed (`DROP` removes a key)."""
    body = {**BASE_CREATE, **fields}
    return {k: v for k, v in body.items() if v is not DROP}


def create(variant: str = "valid", **fields: Any) -> Step:
    """Return a create step with a JSON body."""
    return Step("create", variant, body=create_body(**fields))


def _on(operation: str, slot: int, variant: str = "valid", **kw: Any) -> Step:
    """Return a step on a sandbox slot."""
    return Step(operation, variant, sandbox=slot, **kw)


def _renew(slot: int, variant: str, value: Any) -> Step:
    """Return a renew step with `{"expiresAt": value}`."""
    return _on("renew", slot, variant, body={"expiresAt": value})


def _list(variant: str = "valid", auth: Auth = "ok", **params: str | list[str]) -> Step:
    """Return a list step with query parameters."""
    pairs: list[tuple[str, str]] = []
    for name, value in params.items():
        pairs += [(name, v) for v in value] if isinstance(value, list) else [(name, value)]
    return Step("list", variant, params=tuple(pairs), auth=auth)


BAD_LABELS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("label-value-amp", {"team": "x&y=z"}),
    ("label-value-space", {"team": "a b"}),
    ("label-value-long", {"team": "v" * 64}),
    ("label-value-dash", {"team": "-a"}),
    ("label-key-space", {"bad key": "v"}),
    ("label-key-reserved", {"opensandbox.io/x": "y"}),
    ("label-key-long", {"k" * 64: "v"}),
    ("label-key-prefix", {"Bad_Prefix/k": "v"}),
    ("label-value-int", {"team": 1}),
)

INVALID_CREATES: tuple[Step, ...] = (
    *(create(name, metadata=labels) for name, labels in BAD_LABELS),
    create("timeout-low", timeout=10),
    create("timeout-59", timeout=59),
    create("timeout-negative", timeout=-5),
    create("timeout-float", timeout=600.5),
    create("timeout-bool", timeout=True),
    create("no-resource-limits", resourceLimits=DROP),
    create("resource-limits-int", resourceLimits={"cpu": 1}),
    create("resource-limits-list", resourceLimits=[]),
    create("resource-limits-bogus", resourceLimits={"cpu": "lots"}),
    create("no-image", image=DROP),
    create("image-empty", image={"uri": ""}),
    create("image-string", image="python:3.11"),
    create("image-no-uri", image={}),
    create("image-and-snapshot", snapshotId="snap-1"),
    create("snapshot-unknown", image=DROP, snapshotId="sandproof-no-snapshot"),
    create("no-entrypoint", entrypoint=DROP),
    create("entrypoint-empty", entrypoint=[]),
    create("entrypoint-string", entrypoint="tail"),
    create("env-int", env={"A": 1}),
    create("env-reserved", env={"OPENSANDBOX_LIFECYCLE": "x"}),
    create("no-resource-limits-null", resourceLimits=None),
    create("metadata-list", metadata=[]),
    create(
        "network-policy", networkPolicy={"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}
    ),
    create("network-policy-list", networkPolicy=[]),
    create("secure-access", secureAccess=True),
    create("extensions", extensions={"sandproof": "1"}),
    create("metadata-empty", metadata={}),
    create("lifecycle-hooks", lifecycle={}),
    Step("create", "body-list", body=[]),
    Step("create", "body-null", raw=b"null"),
    Step("create", "malformed-json", raw=b'{"image": {'),
    Step("create", "empty-body", raw=b""),
    Step("create", "no-content-type", body=create_body(), content_type=None),
    Step("create", "text-content-type", body=create_body(), content_type="text/plain"),
)

CANONICAL_PROGRAMS: tuple[Program, ...] = (
    Program(
        "lifecycle",
        (
            create(metadata={"team": "a", "purpose": "demo"}, env={"A": "1"}),
            _on("get", 1),
            _on("pause", 1),
            _on("get", 1, "paused"),
            _on("pause", 1, "already-paused"),
            _on("resume", 1),
            _on("get", 1, "resumed"),
            _on("resume", 1, "already-running"),
            _renew(1, "future", RelTime(3600)),
            _on("get", 1, "renewed"),
            _on("delete", 1),
            _on("get", 1, "deleted"),
            _on("delete", 1, "deleted"),
            _on("pause", 1, "deleted"),
            _on("resume", 1, "deleted"),
        ),
    ),
    Program(
        "list-filters-and-pagination",
        (
            create(metadata={"team": "a", "tier": "x"}),
            create(metadata={"team": "a", "tier": "y"}),
            create(metadata={"team": "b"}, timeout=None),
            _list(),
            _list("filter", metadata="team=a"),
            _list("filter", metadata="team=a&tier=x"),
            _list("filter", metadata="team=a", state="running"),
            _list("filter", state=["Paused", "Failed"]),
            _on("pause", 2),
            _list("filter", state="PAUSED"),
            _list("filter", state=["running", "paused"], pageSize="2"),
            _list("page", pageSize="1", page="2"),
            _list("page", page="9"),
            _list("page", pageSize="200"),
            _list("filter", metadata="team=zzz"),
            _list("filter", metadata="a=b=c"),
            _list("filter", metadata=""),
            _list("filter", state="bogus"),
            _list("bad-metadata", metadata="=&&"),
            _list("bad-metadata", metadata="a"),
            _list("bad-page", pageSize="500"),
            _list("bad-page", page="0"),
            _list("bad-page", pageSize="-1"),
            _list("bad-page", page="x"),
            _list("bad-page", page="1.5"),
        ),
    ),
    Program("create-validation", (create(), *INVALID_CREATES, _list())),
    Program(
        "renew-expiration",
        (
            create(),
            _renew(1, "future", RelTime(3600)),
            _renew(1, "future-z", RelTime(7200, "Z")),
            _renew(1, "future-plus2", RelTime(5400, "plus2")),
            _renew(1, "future-naive", RelTime(4000, "naive")),
            _on("get", 1, "renewed"),
            _renew(1, "absolute", "2030-01-01T00:00:00Z"),
            _renew(1, "date-only", "2030-06-01"),
            _on("get", 1, "renewed"),
            _renew(1, "past", RelTime(-3600)),
            _renew(1, "epoch-int", 5),
            _renew(1, "epoch-future", 1_900_000_000),
            _renew(1, "garbage", "garbage"),
            _renew(1, "null", None),
            _on("renew", 1, "missing", body={}),
            _on("renew", 1, "body-list", body=[]),
            _on("renew", 1, "malformed-json", raw=b"{bad"),
            _renew(0, "unknown-sandbox", RelTime(3600)),
            create(timeout=None),
            _renew(2, "no-expiry", RelTime(3600)),
            _on("get", 2),
        ),
    ),
    Program(
        "endpoints",
        (
            create(),
            _on("endpoint", 1, "direct-execd"),
            _on("endpoint", 1, "direct-egress", port="18080"),
            _on("endpoint", 1, "direct-http", port="8080"),
            _on("endpoint", 1, "server-proxy", params=(("use_server_proxy", "true"),)),
            _on("endpoint", 1, "server-proxy", port="18080", params=(("use_server_proxy", "yes"),)),
            _on("endpoint", 1, "direct-execd", params=(("use_server_proxy", "false"),)),
            _on("endpoint", 1, "bad-proxy-flag", params=(("use_server_proxy", "maybe"),)),
            _on("endpoint", 1, "invalid-port", port="0"),
            _on("endpoint", 1, "invalid-port", port="65536"),
            _on("endpoint", 1, "invalid-port", port="-1"),
            _on("endpoint", 1, "port-not-int", port="abc"),
            _on("endpoint", 1, "signed", params=(("expires", "2000000000"),)),
            _on("endpoint", 1, "signed-proxy", params=(("use_server_proxy", "true"), ("expires", "1"))),
            _on("endpoint", 1, "expires-not-int", params=(("expires", "abc"),)),
            _on("endpoint", 0, "unknown-sandbox"),
            _on("endpoint", 0, "invalid-port", port="0"),
            _on("pause", 1),
            _on("endpoint", 1, "direct-execd-paused"),
        ),
    ),
    Program(
        "auth-and-routing",
        (
            create(),
            _list("auth-missing", auth="missing"),
            _list("auth-wrong", auth="wrong"),
            Step("create", "auth-missing", body=create_body(), auth="missing"),
            _on("get", 1, "auth-wrong", auth="wrong"),
            _on("delete", 1, "auth-missing", auth="missing"),
            _on("pause", 1, "auth-wrong", auth="wrong"),
            _on("endpoint", 1, "auth-missing", auth="missing"),
            _on("get", 1, "no-prefix", prefix=""),
            Step("list", "no-prefix", prefix=""),
            _on("get", 1, "request-id", request_id="sandproof-req-1"),
            _on("get", 0, "unknown-sandbox"),
            _on("get", 0, "unknown-sandbox-auth-missing", auth="missing"),
            _on("delete", 0, "unknown-sandbox"),
        ),
    ),
)


# -- generated programs ------------------------------------------------------------------------------

_META_KEYS = ("team", "tier", "purpose", "app.kubernetes.io/name", "example.com/owner")
_META_VALUES = ("a", "b", "demo", "x-1", "v.2", "")
_STATES = ("Running", "running", "Paused", "PAUSED", "Failed", "Pending", "bogus")
_SLOTS = st.sampled_from((1, 1, 1, 2, 2, 3, 0))


@st.composite
def _valid_create(draw: st.DrawFn) -> Step:
    """Draw a create the real server accepts."""
    fields: dict[str, Any] = {
        "timeout": draw(st.sampled_from((600, 60, 3600, None, "600", 600.0))),
        "resourceLimits": draw(
            st.sampled_from(({"cpu": "1", "memory": "2Gi"}, {"cpu": "500m", "memory": "512Mi"}, {}))
        ),
        "entrypoint": draw(
            st.sampled_from((["tail", "-f", "/dev/null"], ["sleep", "infinity"], ["python", "-c", "1"]))
        ),
    }
    if draw(st.booleans()):
        fields["metadata"] = draw(
            st.dictionaries(st.sampled_from(_META_KEYS), st.sampled_from(_META_VALUES), max_size=3)
        )
    env = draw(st.sampled_from((None, {"A": "1"}, {"A": "1", "B": None}, {})))
    if env is not None:
        fields["env"] = env
    extra = draw(st.sampled_from(("valid",) * 6 + ("platform", "unknown-field", "secure-access-false", "extensions")))
    if extra == "extensions":
        fields["extensions"] = {"sandproof": "1"}
    elif extra == "platform":
        fields["platform"] = {"os": "linux", "arch": "arm64"}
    elif extra == "unknown-field":
        fields["sandproofExtra"] = 1
    elif extra == "secure-access-false":
        fields["secureAccess"] = False
    return create(extra, **fields)


@st.composite
def _list_step(draw: st.DrawFn) -> Step:
    """Draw a list with metadata and state filters and pagination, sometimes invalid."""
    params: list[tuple[str, str]] = []
    variant = "valid"
    pairs = draw(st.dictionaries(st.sampled_from(_META_KEYS[:3]), st.sampled_from(_META_VALUES[:3]), max_size=2))
    if pairs:
        params.append(("metadata", "&".join(f"{k}={v}" for k, v in pairs.items())))
    elif draw(st.integers(0, 5)) == 0:
        params.append(("metadata", draw(st.sampled_from(("=&&", "a", "team")))))
        variant = "bad-metadata"
    params += [("state", s) for s in draw(st.lists(st.sampled_from(_STATES), max_size=2))]
    for name in ("page", "pageSize"):
        value = draw(st.sampled_from((None, None, "1", "2", "200", "0", "-1", "x", "201")))
        if value is not None:
            params.append((name, value))
            if value in ("0", "-1", "x", "201"):
                variant = "bad-page"
    return Step("list", variant, params=tuple(params))


_RENEWS: tuple[tuple[str, Any], ...] = (
    ("future", RelTime(3600)),
    ("future-z", RelTime(1800, "Z")),
    ("future-plus2", RelTime(900, "plus2")),
    ("future-naive", RelTime(1200, "naive")),
    ("absolute", "2030-01-01T00:00:00Z"),
    ("past", RelTime(-3600)),
    ("epoch-int", 5),
    ("epoch-future", 1_900_000_000),
    ("garbage", "not-a-time"),
    ("null", None),
)
_ENDPOINTS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("direct-execd", "44772", ()),
    ("direct-egress", "18080", ()),
    ("server-proxy", "44772", (("use_server_proxy", "true"),)),
    ("server-proxy", "18080", (("use_server_proxy", "true"),)),
    ("invalid-port", "0", ()),
    ("invalid-port", "70000", ()),
    ("port-not-int", "x", ()),
    ("bad-proxy-flag", "44772", (("use_server_proxy", "maybe"),)),
)


@st.composite
def _sandbox_step(draw: st.DrawFn) -> Step:
    """Draw a step on a sandbox slot."""
    slot = draw(_SLOTS)
    operation = draw(st.sampled_from(("get", "get", "pause", "resume", "delete", "renew", "endpoint")))
    if operation == "renew":
        if draw(st.integers(0, 6)) == 0:
            return _on("renew", slot, "malformed", raw=draw(st.sampled_from((b"{bad", b"", b"[]", b"{}"))))
        variant, value = draw(st.sampled_from(_RENEWS))
        return _renew(slot, variant, value)
    if operation == "endpoint":
        variant, port, params = draw(st.sampled_from(_ENDPOINTS))
        return _on("endpoint", slot, variant, port=port, params=params)
    return _on(operation, slot)


def _with_auth(step: Step, auth: Auth) -> Step:
    """Send a step with a missing or wrong key."""
    return replace(step, auth=auth, variant=f"auth-{auth}") if auth != "ok" else step


@st.composite
def steps(draw: st.DrawFn) -> Step:
    """Draw any step: valid and invalid creates, lists, and steps on sandbox slots."""
    step = draw(
        st.one_of(
            _valid_create(),
            _valid_create(),
            st.sampled_from(INVALID_CREATES),
            _list_step(),
            _sandbox_step(),
            _sandbox_step(),
            _sandbox_step(),
        )
    )
    step = _with_auth(step, draw(st.sampled_from(("ok",) * 12 + ("missing", "wrong"))))
    if draw(st.integers(0, 9)) == 0:
        step = replace(step, request_id="sandproof-req-gen")
    if step.operation in ("get", "list") and draw(st.integers(0, 9)) == 0:
        step = replace(step, prefix="")
    return step


def programs(min_steps: int = 3, max_steps: int = 8) -> st.SearchStrategy[Program]:
    """Return a strategy of programs of `min_steps`..`max_steps` steps that start with a valid create."""
    return st.builds(
        lambda first, rest: Program("generated", (first, *rest)),
        _valid_create(),
        st.lists(steps(), min_size=min_steps - 1, max_size=max_steps - 1),
    )
