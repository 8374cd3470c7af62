"""What a replay changes in a recorded request so the target can answer it, and how exchanges are classified.

* **Ids**: an :class:`IdMap` learns, from each pair of answers (recorded, replayed), which recorded id
  stands for which replayed one (``id``, ``sandbox_id``, ``snapshotId``, ... fields at the same place in
  both bodies) and rewrites later requests (path, query, body, Host and sandbox-id headers) with the
  target's ids; the target's answers are mapped back before comparing.
* **Times**: timestamps in a request body are moved by how much later the target's sandbox was created
  than the recorded one, so "expire 30 minutes after creation" still means that.
* **Execution ids**: an execd command stream's ``init`` event names the execution in its ``text``; the ids of
  the paired streams are learnt like any other (:meth:`IdMap.learn_stream`), so a later status or logs
  request names the target's execution.
* **Secrets**: a redacted credential is replaced by the replay's own key (the provider's auth header) or by
  a token the target handed out earlier: an endpoint's ``headers`` (``OpenSandbox-Secure-Access``,
  ``X-EXECD-ACCESS-TOKEN``) apply to requests under that endpoint's path, each endpoint its own token;
  other redacted headers are left out.
* **Operations**: an OpenSandbox lifecycle call gets the differential run's ``operation:variant`` key
  (``create:valid``, ``endpoint:direct-execd``, ...), so the known deviations apply to it; any other call
  is keyed ``METHOD /path`` with ids as ``{id}``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from harness.differential.session import parse_time
from mockserver.core.redact import REDACTED

__all__ = ["AUTH_HEADERS", "IdMap", "Operation", "classify", "shift_times"]

#: The header each provider's SDK authenticates with, and how a key is written into it.
AUTH_HEADERS: dict[str, tuple[str, str]] = {
    "opensandbox": ("open-sandbox-api-key", "{key}"),
    "tensorlake": ("authorization", "Bearer {key}"),
}
_ID_KEY = re.compile(r"^(id|.+_id|.+Id|pid)$")
_ID_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{7,}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?P<frac>\.\d+)?(?P<tz>Z|z|[+-]\d{2}:\d{2})?$")
_LIFECYCLE = re.compile(r"^/v1/sandboxes(?:/(?P<id>[^/]+)(?P<rest>/.*)?)?$")
_ACTIONS = {"/pause": "pause", "/resume": "resume", "/renew-expiration": "renew"}
_PROXY_ON = ("true", "yes", "1", "on")


@dataclass
class IdMap:
    """Recorded id to replayed id, learnt from pairs of answers; rewrites text both ways."""

    forward: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    #: Endpoint path on the target (``/direct/<id>/44772``) -> the headers its lookup handed out.
    endpoint_tokens: dict[str, dict[str, str]] = field(default_factory=dict)

    def learn(self, recorded: Any, replayed: Any, *, ids: bool = True) -> None:
        """Pair the ids found at the same places in two JSON values (and keep tokens the target handed out).

        ``ids=False`` keeps only the tokens: a listing may hold other objects, in another order.
        """
        if isinstance(recorded, Mapping) and isinstance(replayed, Mapping):
            for key, value in recorded.items():
                if key not in replayed:
                    continue
                other = replayed[key]
                if (
                    ids
                    and isinstance(value, str)
                    and isinstance(other, str)
                    and _ID_KEY.match(str(key))
                    and _ID_VALUE.match(value)
                    and value != other
                    and value not in self.forward
                ):
                    self.forward[value] = other
                elif str(key).lower() == "headers" and isinstance(other, Mapping):
                    handed = {str(k).lower(): str(v) for k, v in other.items() if isinstance(v, str)}
                    self.tokens.update(handed)
                    endpoint = replayed.get("endpoint")
                    if isinstance(endpoint, str):
                        self.endpoint_tokens[_endpoint_path(endpoint)] = handed
                else:
                    self.learn(value, other, ids=ids)
        elif isinstance(recorded, list) and isinstance(replayed, list):
            for a, b in zip(recorded, replayed, strict=False):
                self.learn(a, b, ids=ids)

    def learn_stream(self, recorded: Any, replayed: Any) -> None:
        """Pair the execution ids of two execd event streams (lists of events): each ``init`` event's ``text``."""
        if not isinstance(recorded, list) or not isinstance(replayed, list):
            return
        for a, b in zip(_inits(recorded), _inits(replayed), strict=False):
            if a != b and _ID_VALUE.match(a) and a not in self.forward:
                self.forward[a] = b

    def token(self, name: str, path: str) -> str | None:
        """Return the token header ``name`` a request to ``path`` (target form) carries: its endpoint's, else the latest."""
        best = ""
        for prefix, handed in self.endpoint_tokens.items():
            if (
                name in handed
                and len(prefix) > len(best)
                and (path == prefix or path.startswith(prefix.rstrip("/") + "/"))
            ):
                best = prefix
        return self.endpoint_tokens[best][name] if best else self.tokens.get(name)

    def to_target(self, text: str) -> str:
        """Rewrite recorded ids in ``text`` as the target's."""
        return _substitute(text, self.forward)

    def to_recorded(self, text: str) -> str:
        """Rewrite the target's ids in ``text`` back as the recorded ones."""
        return _substitute(text, {v: k for k, v in self.forward.items()})

    def template(self, path: str) -> str:
        """Return ``path`` with every known (recorded) id as ``{id}``."""
        return _substitute(path, dict.fromkeys(self.forward, "{id}"))


def _inits(events: list[Any]) -> list[str]:
    """Return the ``text`` of every ``init`` event of a stream, in order."""
    return [
        e["text"]
        for e in events
        if isinstance(e, Mapping) and e.get("type") == "init" and isinstance(e.get("text"), str)
    ]


def _endpoint_path(endpoint: str) -> str:
    """Return the path part of an endpoint (``host:port/path``, with or without a scheme)."""
    rest = endpoint.split("://", 1)[-1]
    slash = rest.find("/")
    return rest[slash:].rstrip("/") if slash >= 0 else ""


def _substitute(text: str, table: Mapping[str, str]) -> str:
    if not table or not text:
        return text
    pattern = re.compile("|".join(re.escape(k) for k in sorted(table, key=len, reverse=True)))
    return pattern.sub(lambda m: table[m.group(0)], text)


@dataclass(frozen=True)
class Operation:
    """How a recorded request is known: the deviation ``key``, the lifecycle ``name`` and the sandbox it names."""

    key: str
    name: str | None = None
    sandbox_id: str | None = None

    @property
    def is_create(self) -> bool:
        """Tell whether this call creates a sandbox."""
        return self.name == "create"


def classify(provider: str, method: str, path: str, query: str, body: Any, ids: IdMap) -> Operation:
    """Return the :class:`Operation` of a recorded request (``body`` parsed JSON or None)."""
    match = _LIFECYCLE.match(path) if provider == "opensandbox" else None
    name: str | None
    if match is None:
        sandbox = next((seg for seg in path.split("/") if seg in ids.forward), None)
        name = "create" if method == "POST" and path.rstrip("/").endswith("/sandboxes") else None
        return Operation(f"{method} {ids.template(path)}", name, sandbox)
    sandbox, rest = match["id"], match["rest"]
    variant = "valid"
    name = None
    if sandbox is None:
        name = {"POST": "create", "GET": "list"}.get(method)
        if name == "create" and isinstance(body, Mapping) and body.get("networkPolicy"):
            variant = "network-policy"
    elif rest is None:
        name = {"GET": "get", "DELETE": "delete"}.get(method)
    elif method == "POST" and rest in _ACTIONS:
        name = _ACTIONS[rest]
    elif method == "GET" and rest.startswith("/endpoints/"):
        name = "endpoint"
        variant = _endpoint_variant(rest.removeprefix("/endpoints/"), query)
    if name is None:
        return Operation(f"{method} {ids.template(path)}", None, sandbox)
    return Operation(f"{name}:{variant}", name, sandbox)


def _endpoint_variant(port: str, query: str) -> str:
    flags = [v.lower() for k, _, v in (p.partition("=") for p in query.split("&")) if k == "use_server_proxy"]
    if flags and flags[-1] in _PROXY_ON:
        return "server-proxy"
    return {"44772": "direct-execd", "18080": "direct-egress"}.get(port, "direct-http")


def shift_times(value: Any, delta: timedelta) -> Any:
    """Return a JSON value with every RFC 3339 timestamp moved by ``delta``, each written in its own style."""
    if not delta:
        return value
    if isinstance(value, Mapping):
        return {k: shift_times(v, delta) for k, v in value.items()}
    if isinstance(value, list):
        return [shift_times(v, delta) for v in value]
    if isinstance(value, str):
        match = _TIMESTAMP.match(value)
        when = parse_time(value) if match else None
        if match is None or when is None:
            return value
        return _render_like(match, when + delta)
    return value


def _render_like(match: re.Match[str], when: datetime) -> str:
    frac, tz = match["frac"], match["tz"]
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        digits = len(frac) - 1
        text += "." + f"{when.microsecond:06d}"[:digits].ljust(digits, "0")
    if tz in ("Z", "z"):
        return text + tz
    if tz:
        offset = when.utcoffset() or timedelta(0)
        minutes = int(offset.total_seconds() // 60)
        sign = "+" if minutes >= 0 else "-"
        return text + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return text


def replay_headers(
    provider: str,
    headers: Mapping[str, str],
    ids: IdMap,
    *,
    api_key: str | None,
    drop_host: Iterable[str],
    path: str = "",
) -> list[tuple[str, str]]:
    """Return the headers to send: ids rewritten, credentials replaced, the recorder's own Host left out.

    ``path`` is the request's path on the target: a token header gets the token of the endpoint it is under.
    """
    auth_name, auth_form = AUTH_HEADERS.get(provider, ("", ""))
    skipped = {"content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade"}
    own_hosts = set(drop_host)
    out: list[tuple[str, str]] = []
    for name, value in headers.items():
        if name in skipped or (name == "host" and value in own_hosts):
            continue
        if value == REDACTED:
            if name == auth_name and api_key:
                out.append((name, auth_form.format(key=api_key)))
            elif (token := ids.token(name, path)) is not None:
                out.append((name, token))
            continue
        out.append((name, ids.to_target(value)))
    return out
