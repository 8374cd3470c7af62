"""Replay a cassette against any target and report every difference from what was recorded.

Each recorded request is sent again, in the order the requests started, rewritten for the target (ids,
times, credentials: :mod:`harness.recording.rewrite`). Both answers, the recorded one and the target's, go
through the differential run's normalisation (:class:`harness.differential.session.Session`: sandbox ids as
``<sandbox#N>``, timestamps relative to the sandbox's creation, ports, request ids) and its comparison
(:func:`harness.differential.compare.diff`: status, the compared headers, the body's keys, types and
values, so a different error ``code`` shows as ``body.code``). For OpenSandbox the differential run's known
deviations (:mod:`harness.differential.deviations`) mark the differences they cover, and so does every
``--ignore JSONPATH`` rule (:class:`harness.recording.normalise.IgnoreRule`); anything else is unexplained.
Epoch-millisecond timestamps (TensorLake's bodies, execd's events) are compared as ``<epoch-ms>`` and execd's
``execution_time`` as ``<duration-ms>``; an execd stream's execution id (its ``init`` event's ``text``) is
learnt and mapped like a sandbox id (:mod:`harness.recording.normalise`, :mod:`harness.recording.rewrite`).

The target is a URL, or ``mock`` for a fresh in-process mock of the cassette's provider served on a
loopback port (wall clock, the replay's API key).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.differential.compare import Difference, diff, difference_values
from harness.differential.deviations import KNOWN_DEVIATIONS, OPEN_FINDINGS, Deviation, covering
from harness.differential.programs import Step
from harness.differential.session import Observed, Session, Side, event_stream, reply_body
from harness.recording.normalise import IgnoreRule, volatile_placeholders
from harness.recording.rewrite import IdMap, Operation, classify, replay_headers, shift_times
from mockserver.asgi import clients
from mockserver.core.cassette import Cassette, Exchange, Message
from mockserver.core.environment import DEFAULT_API_KEY

__all__ = ["ExchangeResult", "ReplayReport", "Replayer", "epoch_placeholders", "serve_target"]

_SHOW = 300
#: The reason an ignored difference is explained by.
IGNORED = "ignored with --ignore"


@dataclass(frozen=True)
class ExchangeResult:
    """One replayed exchange: the operation, both normalised answers and their differences."""

    index: int
    exchange: Exchange
    operation: Operation
    sent: str
    recorded: Observed
    replayed: Observed
    differences: tuple[Difference, ...]

    @property
    def unexplained(self) -> tuple[Difference, ...]:
        """Return the differences no known deviation covers."""
        return tuple(d for d in self.differences if d.deviation is None)

    def render(self, *, covered: bool = True) -> str:
        """Return the exchange and its differences (the covered ones too unless ``covered`` is False)."""
        shown = self.differences if covered else self.unexplained
        head = f"#{self.index} {self.operation.key}: {self.exchange.line}"
        lines = [head, *(f"    - {d.describe()}" for d in shown)]
        for label, seen in (("recorded", self.recorded), ("replayed", self.replayed)):
            lines.append(f"      {label:<9} -> {seen.status} {_clip(seen.raw)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ReplayReport:
    """Every exchange of one cassette replayed against one target."""

    name: str
    target: str
    results: tuple[ExchangeResult, ...]

    @property
    def unexplained(self) -> tuple[ExchangeResult, ...]:
        """Return the exchanges with differences no known deviation covers."""
        return tuple(r for r in self.results if r.unexplained)

    @property
    def known(self) -> tuple[ExchangeResult, ...]:
        """Return the exchanges whose every difference is a known deviation."""
        return tuple(r for r in self.results if r.differences and not r.unexplained)

    @property
    def ignored(self) -> tuple[ExchangeResult, ...]:
        """Return the explained exchanges with at least one difference an ``--ignore`` rule covers."""
        return tuple(
            r
            for r in self.known
            if any(d.deviation is not None and d.deviation.reason == IGNORED for d in r.differences)
        )

    @property
    def ok(self) -> bool:
        """Tell whether nothing differed beyond the known deviations (and the ignored paths)."""
        return not self.unexplained

    def deviations(self) -> list[Deviation]:
        """Return the known deviations this replay met, once each."""
        seen: list[Deviation] = []
        for result in self.results:
            for difference in result.differences:
                if difference.deviation is not None and difference.deviation not in seen:
                    seen.append(difference.deviation)
        return seen

    def render(self) -> str:
        """Return the readable report: a summary line, then each exchange that differed."""
        same = len(self.results) - len(self.known) - len(self.unexplained)
        ignored = f" ({len(self.ignored)} by --ignore)" if self.ignored else ""
        lines = [
            f"replay {self.name} against {self.target}: {len(self.results)} exchanges, {same} identical, "
            f"{len(self.known)} with known deviations only{ignored}, {len(self.unexplained)} with unexplained "
            "differences"
        ]
        lines += [r.render() for r in self.results if r.differences]
        return "\n".join(lines)


class Replayer:
    """Send cassettes' requests to ``target`` (a base URL) and compare the answers."""

    def __init__(
        self,
        target: str,
        *,
        api_key: str | None = DEFAULT_API_KEY,
        deviations: Sequence[Deviation] | None = None,
        timeout: float = 60.0,
        ignore: Sequence[IgnoreRule | str] = (),
    ) -> None:
        self.target = target.rstrip("/")
        self.api_key = api_key
        self.deviations = tuple(KNOWN_DEVIATIONS + OPEN_FINDINGS if deviations is None else deviations)
        self.timeout = timeout
        self.ignore = tuple(rule if isinstance(rule, IgnoreRule) else IgnoreRule.parse(rule) for rule in ignore)

    def replay(self, cassette: Cassette, name: str = "cassette") -> ReplayReport:
        """Replay every exchange of ``cassette`` in order; return the report."""
        with clients.client(trust_env=False, timeout=self.timeout, follow_redirects=False) as client:
            run = _Run(self, cassette, client)
            results = tuple(run.exchange(i, e) for i, e in enumerate(cassette.exchanges, 1))
        return ReplayReport(name, self.target, results)


class _Run:
    """The state of one cassette's replay: both sides' sessions and the id map."""

    def __init__(self, replayer: Replayer, cassette: Cassette, client: httpx.Client) -> None:
        header = cassette.header
        self.replayer = replayer
        self.client = client
        self.provider = header.provider
        recorded_url = header.listen if header.preserve_host else header.upstream
        # The sessions only normalise here; the requests go through ``client``.
        self.recorded = Session(Side("recorded", recorded_url, None), client)
        self.replayed = Session(Side("replayed", replayer.target, replayer.api_key), client)
        self.ids = IdMap()
        self.slots = 0
        self.own_hosts = {urlsplit(header.listen).netloc, urlsplit(header.upstream).netloc}

    def exchange(self, index: int, exchange: Exchange) -> ExchangeResult:
        """Replay one exchange and compare."""
        body_json = _json(exchange.request.body.text) if exchange.request.body.encoding == "utf-8" else None
        operation = classify(self.provider, exchange.method, exchange.path, exchange.query, body_json, self.ids)
        slot = self.recorded.slots.get(operation.sandbox_id or "")
        step = _step(operation, slot)
        shifted = shift_times(body_json, self._delta(slot)) if body_json is not None else None
        if step is not None and body_json is not None:
            self.recorded.resolve(body_json, step, index)
            self.replayed.resolve(shifted, step, index)
        content = self._content(exchange, body_json, shifted)
        path = self.ids.to_target(exchange.path)
        query = self.ids.to_target(exchange.query)
        sent = f"{exchange.method} {path}" + (f"?{query}" if query else "")
        headers = replay_headers(
            self.provider,
            exchange.request.headers,
            self.ids,
            api_key=self.replayer.api_key,
            drop_host=self.own_hosts,
            path=path,
        )
        began = time.monotonic()
        try:
            response = self.client.request(
                exchange.method,
                self.replayer.target + path + (f"?{query}" if query else ""),
                content=content,
                headers=headers,
            )
            replayed = Exchange.build(
                exchange.seq,
                started=0.0,
                elapsed=time.monotonic() - began,
                method=exchange.method,
                path=path,
                query=query,
                request_headers=headers,
                request_body=content or b"",
                status=response.status_code,
                response_headers=list(response.headers.multi_items()),
                response_body=response.content,
            )
            raw_reply = _json(response.text)
        except httpx.HTTPError as exc:
            replayed = Exchange.build(
                exchange.seq, started=0.0, elapsed=0.0, method=exchange.method, path=path, query=query,
                request_headers=headers, request_body=content or b"", status=0, response_headers=[], response_body=b"",
                error=f"{type(exc).__name__}: {exc}",
            )  # fmt: skip
            raw_reply = None
        recorded_reply = _json(exchange.response.body.text)
        self.ids.learn(recorded_reply, raw_reply, ids=exchange.method in ("POST", "PUT", "PATCH"))
        if _is_stream(exchange.response.header("content-type")) and _is_stream(
            replayed.response.header("content-type")
        ):
            self.ids.learn_stream(event_stream(exchange.response.body.text), event_stream(replayed.response.body.text))
        rec_response = _response(exchange.status, exchange.response, lambda text: text)
        rep_response = _response(replayed.status, replayed.response, self.ids.to_recorded)
        if operation.is_create:
            slot = self._register(rec_response, rep_response) or slot
        request_id = exchange.request.header("x-request-id") or None
        observed = (
            self._observe(self.recorded, exchange, rec_response, slot, request_id),
            self._observe(self.replayed, replayed, rep_response, slot, request_id),
        )
        differences = tuple(
            Difference(where, a, b, self._covering(operation, where, a, b)) for where, a, b in diff(*observed)
        )
        return ExchangeResult(index, exchange, operation, sent, observed[0], observed[1], differences)

    def _content(self, exchange: Exchange, body_json: Any, shifted: Any) -> bytes | None:
        raw = exchange.request.body.bytes()
        if not raw:
            return None
        if body_json is not None and shifted != body_json:
            return self.ids.to_target(json.dumps(shifted, separators=(",", ":"))).encode()
        if exchange.request.body.encoding == "utf-8":
            return self.ids.to_target(exchange.request.body.text).encode()
        return raw

    def _delta(self, slot: int | None) -> timedelta:
        label = f"created#{slot if slot is not None else self.slots}"
        if label in self.recorded.anchors and label in self.replayed.anchors:
            return self.replayed.anchors[label] - self.recorded.anchors[label]
        return timedelta(0)

    def _register(self, recorded: httpx.Response, replayed: httpx.Response) -> int | None:
        made = (_created(recorded), _created(replayed))
        if made[0] is None or made[1] is None or made[0][0] != made[1][0]:
            return None
        self.slots += 1
        self.recorded.register(self.slots, *made[0])
        self.replayed.register(self.slots, *made[1])
        return self.slots

    def _observe(
        self, session: Session, exchange: Exchange, response: httpx.Response, slot: int | None, request_id: str | None
    ) -> Observed:
        if exchange.status == 0:
            return Observed(0, {}, "<transport error>", exchange.line, exchange.error)
        body = volatile_placeholders(reply_body(response))
        return session.observe_reply(response, exchange.line, slot=slot, request_id=request_id, body=body)

    def _covering(self, operation: Operation, where: str, a: Any, b: Any) -> Deviation | None:
        rule = next((r for r in self.replayer.ignore if r.matches(where)), None)
        if rule is not None:
            return Deviation("*", rule.text, "", "", IGNORED, finding=f"--ignore {rule.text}")
        if self.provider != "opensandbox":
            return None
        return covering(operation.key, where, difference_values(a, b), self.replayer.deviations)


def _step(operation: Operation, slot: int | None) -> Step | None:
    """Return a differential step for a lifecycle call (it carries the request-time bookkeeping)."""
    if operation.name is None:
        return None
    variant = operation.key.partition(":")[2] if ":" in operation.key else "valid"
    return Step(operation.name, variant, sandbox=slot if slot is not None else 0)


def _json(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _response(status: int, message: Message, mapped: Any) -> httpx.Response:
    """Rebuild a response from a stored message (already decoded, so without its transfer headers)."""
    headers = [(k, mapped(v)) for k, v in message.headers.items() if k not in ("content-encoding", "content-length")]
    body = message.body.bytes() if message.body.encoding != "utf-8" else mapped(message.body.text).encode()
    return httpx.Response(status or 599, headers=headers, content=body)


def _created(response: httpx.Response) -> tuple[str, Any] | None:
    """Return the id and creation time of a successful create answer (either provider's form)."""
    if not 200 <= response.status_code < 300:
        return None
    body = _json(response.text)
    if not isinstance(body, Mapping):
        return None
    ident = body.get("id") or body.get("sandbox_id")
    return (ident, body.get("createdAt")) if isinstance(ident, str) else None


#: The old name of :func:`harness.recording.normalise.volatile_placeholders`.
epoch_placeholders = volatile_placeholders


def _is_stream(content_type: str) -> bool:
    return content_type.startswith("text/event-stream")


def _clip(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= _SHOW else text[:_SHOW] + "..."


@contextmanager
def serve_target(target: str, provider: str, api_key: str | None) -> Iterator[str]:
    """Yield the base URL of ``target``: itself for a URL, a fresh in-process mock for ``mock``."""
    if target != "mock":
        if urlsplit(target).scheme not in ("http", "https"):
            raise ValueError(f"target must be an http(s) URL or 'mock', got {target!r}")
        yield target
        return
    from mockserver.core import VirtualClock

    clock = VirtualClock("wall", start=time.time())
    mock: Any
    if provider == "opensandbox":
        from mockserver.opensandbox import OpenSandboxMock

        mock = OpenSandboxMock(api_key=api_key, clock=clock)
    elif provider == "tensorlake":
        from mockserver.tensorlake import TensorLakeMock

        mock = TensorLakeMock(clock=clock, api_keys=None if api_key is None else [api_key])
    else:
        raise ValueError(f"no mock for provider {provider!r}")
    with mock.server() as server:
        yield server.url
