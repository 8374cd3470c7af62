"""What a run may do to a server it did not start (a ``tensorlake:URL`` or ``opensandbox:URL`` target).

Such a server may be someone's running ``sandproof serve``, a staging deployment or the real service: its
sandboxes, clock, fault rules and journal are not the run's. So:

* :func:`preflight` checks, before any contract runs, that the URL does not end in ``/v1`` (the suite adds
  it), that the server answers, and that it takes the API key: one cheap authenticated ``GET`` of the
  sandbox list. A setup mistake is one :class:`~harness.targets.common.TargetError` line, not a failure per
  contract. When the server also takes a key the run makes up (a sandproof mock takes any key, each key its
  own tenant), the run uses that key: its sandboxes then live in a tenant of their own.
* Without ``--allow-reset`` the run never resets such a server, never moves its clock and never arms faults
  on it: the admin client it hands out is a :class:`ReadOnlyAdminClient`, and the contracts that need those
  operations skip with :func:`reset_refusal`'s reason. Reading (the clock, the journal's unknown fields)
  stays allowed.
* With ``--allow-reset`` the run saves the server's state first (:func:`save`: ``GET /_mock/snapshot`` and
  the fault rules) and puts it back when it ends (:func:`put_back`): its sandboxes, DNS table and fault
  rules, and its clock in its mode at the time it would show had the run not touched it. The journal is not
  put back (a reset clears it).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlsplit

from harness.targets.common import API_KEY_ENV, TargetError
from mockserver.admin.client import AdminClient
from mockserver.asgi import clients

__all__ = [
    "ALLOW_RESET",
    "LIST_PATHS",
    "ReadOnlyAdminClient",
    "Saved",
    "preflight",
    "put_back",
    "reset_refusal",
    "save",
]

#: How to allow a run to reset a target it did not start, on either command line.
ALLOW_RESET = "--allow-reset (sandproof check) or --sandproof-allow-reset (pytest)"
#: The cheap authenticated request of each provider's preflight.
LIST_PATHS = {"opensandbox": "/v1/sandboxes?pageSize=1", "tensorlake": "/sandboxes"}
_OWN_KEY_PREFIX = "sandproof-check-"
#: What a fault rule's JSON says about its past (not part of a rule to arm again).
_FAULT_STATE = frozenset({"id", "fired", "last_fired_at", "ended"})
_TIMEOUT = 5.0


def reset_refusal(spec: str) -> str:
    """Return why a contract that resets, moves the clock of or arms faults on ``spec`` is skipped."""
    return (
        f"target {spec!r} was not started by this run: contracts that reset it, move its clock or arm faults "
        f"through /_mock run only with {ALLOW_RESET}"
    )


class ReadOnlyAdminClient(AdminClient):
    """An admin client that reads (clock, faults, journal, snapshot) and refuses every call that changes state."""

    def __init__(self, base_url: str, spec: str, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self.spec = spec

    def _refuse(self, what: str) -> NoReturn:
        raise TargetError(f"refusing to {what} on {self.spec!r}: {reset_refusal(self.spec)}")

    def reset(self) -> None:
        """Refuse: a reset would delete the server's sandboxes, faults and journal."""
        self._refuse("reset the server")

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Refuse: a restore replaces the server's state."""
        self._refuse("restore a snapshot")

    def seed(self, seed: int | None) -> None:
        """Refuse: seeding changes the ids the server hands out."""
        self._refuse("seed the ids")

    def advance(self, seconds: float) -> float:
        """Refuse: the server's clock is not the run's."""
        self._refuse("move the clock")

    def set_clock_mode(self, mode: str) -> None:
        """Refuse: the server's clock is not the run's."""
        self._refuse("switch the clock's mode")

    def add_fault(self, **rule: Any) -> dict[str, Any]:
        """Refuse: a fault rule would answer the server's other clients too."""
        self._refuse("arm a fault")

    def remove_fault(self, rule_id: int) -> None:
        """Refuse: the fault rules are the server's."""
        self._refuse("remove a fault rule")

    def clear_faults(self) -> None:
        """Refuse: the fault rules are the server's."""
        self._refuse("clear the fault rules")

    def clear_journal(self) -> None:
        """Refuse: the journal is the server's."""
        self._refuse("clear the journal")

    def set_dns(self, entries: dict[str, list[str]], default: str | None = None) -> None:
        """Refuse: the DNS table is the server's."""
        self._refuse("replace the DNS table")


# --- save and put back (--allow-reset) -------------------------------------------------------------------


@dataclass(frozen=True)
class Saved:
    """A server's state when the run began: its snapshot, its fault rules, and when (``time.monotonic()``)."""

    snapshot: dict[str, Any]
    faults: list[dict[str, Any]]
    taken: float


def save(client: AdminClient) -> Saved:
    """Save what :func:`put_back` restores."""
    return Saved(client.snapshot(), client.faults(), time.monotonic())


def put_back(client: AdminClient, saved: Saved) -> None:
    """Restore a saved state; a clock that was running (``wall``) shows the time it would show untouched."""
    clock = dict(saved.snapshot.get("clock") or {})
    if clock.get("mode") == "wall" and isinstance(clock.get("now"), int | float):
        clock["now"] = float(clock["now"]) + (time.monotonic() - saved.taken)
    client.clear_faults()
    client.restore({**saved.snapshot, "clock": clock})
    for rule in saved.faults:
        client.add_fault(**{k: v for k, v in rule.items() if k not in _FAULT_STATE})


# --- preflight -------------------------------------------------------------------------------------------


def preflight(spec: str, provider: str, url: str, api_key: str | None) -> str | None:
    """Check a URL target for ``provider`` before any contract runs; raise :class:`TargetError` in one line.

    Return a key of the run's own when the server takes one it cannot know (so the run gets its own tenant),
    else None.
    """
    import httpx

    if urlsplit(url).path.rstrip("/").endswith("/v1"):
        base = url.rstrip("/").removesuffix("/v1")
        raise TargetError(f"target {spec!r}: the URL ends in /v1, but the suite adds /v1 itself; use {provider}:{base}")
    env = API_KEY_ENV[provider]
    where = f"the {provider} server at {url}"
    try:
        answer = _list(httpx, provider, url, api_key)
    except httpx.HTTPError as exc:
        raise TargetError(f"target {spec!r}: cannot reach {where}: {_one_line(exc)}") from exc
    if answer.status_code in (401, 403):
        code = _code(answer)
        if not api_key:
            raise TargetError(f"target {spec!r}: {where} wants an API key ({answer.status_code}{code}): set {env}")
        raise TargetError(
            f"target {spec!r}: {where} refused the key in {env} ({answer.status_code}{code}): set the key it expects"
        )
    if answer.status_code == 404:
        path = LIST_PATHS[provider].partition("?")[0]
        raise TargetError(
            f"target {spec!r}: GET {path} at {url} answered 404: is it {_article(provider)} {provider} server?"
        )
    if not answer.is_success:
        return None  # the contracts report what the server does wrong
    own = _OWN_KEY_PREFIX + secrets.token_hex(6)
    try:
        taken = _list(httpx, provider, url, own).is_success
    except httpx.HTTPError:
        taken = False
    return own if taken else None


def _list(httpx: Any, provider: str, url: str, api_key: str | None) -> Any:
    """Send the provider's cheap authenticated GET."""
    headers: dict[str, str] = {}
    if api_key:
        headers = (
            {"OPEN-SANDBOX-API-KEY": api_key} if provider == "opensandbox" else {"Authorization": f"Bearer {api_key}"}
        )
    with clients.client(headers=headers, timeout=_TIMEOUT, trust_env=False) as http:
        return http.get(url + LIST_PATHS[provider])


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _code(answer: Any) -> str:
    """Return ``" CODE"`` of an error body's ``code``, or nothing."""
    try:
        body = answer.json()
    except ValueError:
        return ""
    code = body.get("code") if isinstance(body, dict) else None
    return f" {code}" if isinstance(code, str) and code else ""


def _one_line(exc: BaseException) -> str:
    """Return ``Type: message`` on one line."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())
