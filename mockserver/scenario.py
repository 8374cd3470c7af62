"""``sandproof serve --scenario FILE``: start the mocks in a known scenario, the same way on every start.

The document format and the parts that need no HTTP live in :mod:`mockserver.admin.scenario` (it is what
``GET /_mock/scenario`` exports). This module combines several files, hands each provider its keys before
the mocks are built, applies state, clock and DNS before they serve, creates the seed sandboxes through the
provider's own API once they serve (so every seed passes the same rules a client's request does), and arms the
faults last. A refused seed stops the start with the file and the field at fault.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mockserver.admin.scenario import (
    ProviderScenario,
    Scenario,
    ScenarioError,
    SeedSandbox,
    apply_state,
    arm_faults,
    read_scenario,
)
from mockserver.core.environment import DEFAULT_API_KEY
from mockserver.opensandbox.model.auth import API_KEY_HEADER as OPENSANDBOX_KEY_HEADER
from mockserver.opensandbox.model.endpoints import EXECD_ACCESS_HEADER
from mockserver.opensandbox.model.profiles import EXECD_PORT

if TYPE_CHECKING:
    import httpx

    from mockserver.service import HttpMock

__all__ = ["LoadedScenarios", "ScenarioError", "load_scenarios"]


@dataclass(frozen=True)
class _Part:
    """One provider's part and the file it came from."""

    source: str
    part: ProviderScenario


class LoadedScenarios:
    """The scenario files given to ``serve``, merged: each provider's part comes from at most one file."""

    def __init__(self, scenarios: Sequence[Scenario]) -> None:
        self._parts: dict[str, _Part] = {}
        for scenario in scenarios:
            for provider, part in scenario.providers.items():
                if provider in self._parts:
                    raise ScenarioError(
                        scenario.source,
                        provider,
                        f"already given by {self._parts[provider].source} (one file a provider)",
                    )
                self._parts[provider] = _Part(scenario.source, part)

    def api_keys(self, provider: str) -> tuple[str, ...]:
        """Return the keys the scenario pins for ``provider`` (none: the server's own choice)."""
        found = self._parts.get(provider)
        return () if found is None or found.part.api_keys is None else found.part.api_keys

    def server_config(self, provider: str) -> str | None:
        """Return the server configuration file the scenario names for ``provider`` (OpenSandbox only), or None."""
        found = self._parts.get(provider)
        return None if found is None else found.part.server_config

    def before_serving(self, mocks: Mapping[str, HttpMock]) -> None:
        """Restore snapshots, set clocks and DNS tables (in process, before any request)."""
        for provider, found in self._parts.items():
            apply_state(mocks[provider], found.part, found.source)

    def once_serving(
        self, mocks: Mapping[str, HttpMock], urls: Mapping[str, str], execd_token: str | None
    ) -> list[str]:
        """Create the seed sandboxes through each mock's API, then arm the faults; return one line a provider."""
        if not self._parts:
            return []
        from mockserver.asgi import clients  # httpx loads only when a scenario seeds sandboxes

        lines = []
        for provider, found in self._parts.items():
            mock = mocks[provider]
            default_key = (mock.pinned_keys() or [DEFAULT_API_KEY])[0]
            with clients.client(base_url=urls[provider], timeout=60, trust_env=False) as http:
                made = [
                    _SEEDERS[provider](
                        http, seed, seed.api_key or default_key, execd_token, found.source, f"{provider}.sandboxes[{i}]"
                    )
                    for i, seed in enumerate(found.part.sandboxes)
                ]
            arm_faults(mock, found.part, mock.named_faults(), found.source)
            lines.append(
                f"scenario {found.source}: {provider}: {len(made)} seed sandbox(es), {len(found.part.faults)} fault(s)"
            )
        return lines


def load_scenarios(paths: Sequence[str | Path]) -> LoadedScenarios:
    """Read and check every scenario file (a :class:`ScenarioError` names the file and the field at fault)."""
    return LoadedScenarios([read_scenario(path) for path in paths])


def _refused(source: str, where: str, response: httpx.Response, what: str) -> ScenarioError:
    return ScenarioError(source, where, f"{what} answered {response.status_code}: {response.text[:300]}")


def _seed_tensorlake(
    http: httpx.Client, seed: SeedSandbox, key: str, execd_token: str | None, source: str, where: str
) -> str:
    """Create one TensorLake sandbox, write its files through its files API, and suspend it if asked."""
    auth = {"Authorization": f"Bearer {key}"}
    created = http.post("/sandboxes", json=seed.create, headers=auth)
    if created.status_code != 200:
        raise _refused(source, f"{where}.create", created, "POST /sandboxes")
    sandbox_id = str(created.json()["sandbox_id"])
    for path, content in seed.files.items():
        wrote = http.put(
            "/api/v1/files",
            params={"path": path},
            content=content.encode(),
            headers={**auth, "Host": f"{sandbox_id}.local"},
        )
        if wrote.status_code >= 300:
            raise _refused(source, f"{where}.files.{path}", wrote, "PUT /api/v1/files")
    if seed.state == "suspended":
        suspended = http.post(f"/sandboxes/{sandbox_id}/suspend", headers=auth)
        if suspended.status_code >= 300:
            raise _refused(source, f"{where}.state", suspended, "POST /sandboxes/{id}/suspend")
    return sandbox_id


def _seed_opensandbox(
    http: httpx.Client, seed: SeedSandbox, key: str, execd_token: str | None, source: str, where: str
) -> str:
    """Create one OpenSandbox sandbox, upload its files through execd, and pause it if asked."""
    auth = {OPENSANDBOX_KEY_HEADER: key}
    created = http.post("/v1/sandboxes", json=seed.create, headers=auth)
    if created.status_code != 202:
        raise _refused(source, f"{where}.create", created, "POST /v1/sandboxes")
    sandbox_id = str(created.json()["id"])
    execd = {EXECD_ACCESS_HEADER: execd_token} if execd_token else {}
    for path, content in seed.files.items():
        parts: list[tuple[str, Any]] = [
            ("metadata", ("metadata", json.dumps({"path": path}).encode(), "application/json")),
            ("file", (Path(path).name or "file", content.encode(), "application/octet-stream")),
        ]
        wrote = http.post(f"/direct/{sandbox_id}/{EXECD_PORT}/files/upload", files=parts, headers=execd)
        if wrote.status_code >= 300:
            raise _refused(source, f"{where}.files.{path}", wrote, "execd POST /files/upload")
    if seed.state == "paused":
        paused = http.post(f"/v1/sandboxes/{sandbox_id}/pause", headers=auth)
        if paused.status_code >= 300:
            raise _refused(source, f"{where}.state", paused, "POST /v1/sandboxes/{id}/pause")
    return sandbox_id


_SEEDERS = {"tensorlake": _seed_tensorlake, "opensandbox": _seed_opensandbox}
