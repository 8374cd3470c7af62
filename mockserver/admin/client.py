"""A client for a running mock's ``/_mock`` admin API, with the same verbs as :class:`MockCore`."""

from __future__ import annotations

import os
from typing import Any

import httpx

from mockserver.asgi import clients
from mockserver.core.environment import ADMIN_TOKEN_ENV


class AdminError(RuntimeError):
    """Raise when the admin API refuses a call."""


class AdminClient:
    """Drive a mock's admin API over HTTP (reset, snapshot, clock, faults, journal, DNS)."""

    def __init__(
        self,
        base_url: str,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 10,
        token: str | None = None,
    ) -> None:
        token = token if token is not None else os.environ.get(ADMIN_TOKEN_ENV) or None
        headers = {"x-sandproof-admin-token": token} if token else {}
        self._http = clients.client(
            base_url=base_url.rstrip("/") + "/_mock", transport=transport, timeout=timeout, headers=headers
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()

    def _call(self, verb: str, route: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        response = self._http.request(verb, route, json=body, params=query)
        if response.status_code >= 400:
            raise AdminError(f"{verb} /_mock{route}: {response.status_code} {response.text}")
        return response.json() if response.content else None

    def available(self) -> bool:
        """Tell whether the target serves the admin API at all."""
        try:
            return self._http.get("/clock").status_code == 200
        except httpx.HTTPError:
            return False

    def reset(self) -> None:
        """Return the mock to a fresh state."""
        self._call("POST", "/reset")

    def snapshot(self) -> dict[str, Any]:
        """Return the whole state as JSON."""
        result: dict[str, Any] = self._call("GET", "/snapshot")
        return result

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Replace the whole state with ``snapshot``."""
        self._call("POST", "/restore", snapshot)

    def seed(self, seed: int | None) -> None:
        """Make ids deterministic."""
        self._call("POST", "/seed", {"seed": seed})

    def now(self) -> float:
        """Return the mock's virtual time."""
        return float(self._call("GET", "/clock")["now"])

    def advance(self, seconds: float) -> float:
        """Move the virtual clock forward; return the new time."""
        return float(self._call("POST", "/clock/advance", {"seconds": seconds})["now"])

    def set_clock_mode(self, mode: str) -> None:
        """Switch the clock to ``manual``, ``auto`` or ``wall``."""
        self._call("POST", "/clock/mode", {"mode": mode})

    def add_fault(self, **rule: Any) -> dict[str, Any]:
        """Add a fault rule (see :class:`mockserver.core.faults.FaultRule`); return it with its id."""
        result: dict[str, Any] = self._call("POST", "/faults", rule)
        return result

    def faults(self, *, everything: bool = False) -> list[dict[str, Any]]:
        """Return the active fault rules; ``everything``: the ended ones too (spent, removed, cleared)."""
        result: list[dict[str, Any]] = self._call("GET", "/faults", params={"all": "1"} if everything else None)
        return result

    def remove_fault(self, rule_id: int) -> None:
        """Remove one fault rule by id."""
        self._call("DELETE", f"/faults/{rule_id}")

    def clear_faults(self) -> None:
        """Remove every fault rule."""
        self._call("DELETE", "/faults")

    def journal(
        self,
        *,
        method: str | None = None,
        path: str | None = None,
        sandbox_id: str | None = None,
        status: int | None = None,
        since: int | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Return journal entries matching the filters (``since``: numbered after it; ``limit``: the newest N)."""
        params = {"method": method, "path": path, "sandbox_id": sandbox_id, "status": status, "since": since}
        result: list[dict[str, Any]] = self._call("GET", "/journal", params={**params, "limit": limit})
        return result

    def journal_entry(self, seq: int) -> dict[str, Any]:
        """Return one journal entry in full (request and response)."""
        result: dict[str, Any] = self._call("GET", f"/journal/{seq}")
        return result

    def sandboxes(self) -> list[dict[str, Any]]:
        """Return the provider-neutral summary of every live sandbox."""
        result: list[dict[str, Any]] = self._call("GET", "/sandboxes")["sandboxes"]
        return result

    def clear_journal(self) -> None:
        """Forget the journal."""
        self._call("DELETE", "/journal")

    def unknown_fields(self) -> dict[str, list[str]]:
        """Return the request fields the mock did not recognise, per call."""
        result: dict[str, list[str]] = self._call("GET", "/journal/unknown")
        return result

    def set_dns(self, entries: dict[str, list[str]], default: str | None = None) -> None:
        """Replace the DNS table."""
        self._call("PUT", "/dns", {"entries": entries, "default": default})
