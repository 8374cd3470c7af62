"""Serve the in-process mocks of both providers on loopback sockets: :class:`MockStack` and :class:`RunningMock`."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.targets.common import DEFAULT_API_KEY, TargetError, import_object, sdk_env

if TYPE_CHECKING:
    from mockserver.admin.client import AdminClient
    from mockserver.asgi.server import MockServer
    from mockserver.service import HttpMock

__all__ = ["MOCK_CLASSES", "MockStack", "RunningMock"]

#: Where the in-process mock classes live (first importable wins), imported only when first needed.
MOCK_CLASSES: dict[str, tuple[str, ...]] = {
    "tensorlake": ("mockserver.tensorlake:TensorLakeMock", "mockserver.tensorlake.mock:TensorLakeMock"),
    "opensandbox": ("mockserver.opensandbox:OpenSandboxMock", "mockserver.opensandbox.mock:OpenSandboxMock"),
}


@dataclass
class RunningMock:
    """One in-process mock served on a loopback socket: ``.mock`` is the mock object, ``.url`` where it answers."""

    provider: str
    mock: HttpMock
    server: MockServer
    api_key: str

    @property
    def url(self) -> str:
        """Return the base URL, e.g. ``http://127.0.0.1:54321``."""
        return self.server.url

    @property
    def env(self) -> dict[str, str]:
        """Return the SDK environment variables that point at this mock (plus the mock's own, if it has any)."""
        env = sdk_env(self.provider, self.url, self.api_key)
        own = getattr(self.mock, "sdk_env", None)
        if callable(own):
            try:
                extra = own(self.url)
            except TypeError:
                extra = None
            if isinstance(extra, dict):
                env.update({str(k): str(v) for k, v in extra.items()})
        return env

    def reset(self) -> None:
        """Return the mock to a fresh state (no sandboxes, faults or journal)."""
        self.mock.reset()

    def admin_client(self) -> AdminClient:
        """Return an :class:`AdminClient` for this mock's ``/_mock`` admin API over HTTP (close it when done).

        The mock object itself (``.mock``) has the same verbs in process; this client is for code that only
        has the URL. It is not a provider API client: point the SDK at ``.url`` (see ``.env``) for that.
        """
        from mockserver.admin.client import AdminClient

        return AdminClient(self.url)


def _mock_api_key(core: object) -> str:
    """Return a key the mock accepts: its first configured key, else the default."""
    keys = getattr(core, "keys", None)
    if isinstance(keys, Mapping) and keys:
        return str(next(iter(keys)))
    key = getattr(core, "api_key", None)
    return key if isinstance(key, str) and key else DEFAULT_API_KEY


class MockStack:
    """Create in-process mocks on demand, serve them on loopback sockets and stop them together.

    ``runtime`` is what the mocks run sandboxes on: ``emulator`` (default) or ``linux`` (real processes in
    Linux namespaces; creating a mock then raises ``TargetError`` with the requirements message where the
    machine cannot run it).
    """

    def __init__(
        self, classes: Mapping[str, Sequence[str]] | None = None, host: str = "127.0.0.1", runtime: str = "emulator"
    ) -> None:
        self._classes = dict(classes) if classes is not None else None
        self._host = host
        self.runtime = runtime
        self._cores: dict[str, HttpMock] = {}
        self._running: dict[str, RunningMock] = {}
        self._lock = threading.Lock()

    def core(self, provider: str) -> HttpMock:
        """Return the provider's mock object, creating it on first use."""
        with self._lock:
            if provider not in self._cores:
                self._cores[provider] = self._create(provider)
            return self._cores[provider]

    def _create(self, provider: str) -> HttpMock:
        """Instantiate the provider's mock class."""
        classes = self._classes if self._classes is not None else MOCK_CLASSES
        if provider not in classes:
            raise TargetError(f"no mock for provider {provider!r}; known: {', '.join(sorted(classes))}")
        problems = []
        for path in classes[provider]:
            try:
                cls = import_object(path)
            except (ImportError, AttributeError) as exc:
                problems.append(f"{path}: {type(exc).__name__}: {exc}")
                continue
            if self.runtime == "emulator":
                core: HttpMock = cls()
                return core
            try:
                core = cls(runtime=self.runtime)
            except TypeError as exc:
                raise TargetError(f"the {provider} mock {path} has no runtime {self.runtime!r}: {exc}") from exc
            except RuntimeError as exc:  # RuntimeUnavailable: what the machine lacks
                raise TargetError(str(exc)) from exc
            return core
        raise TargetError(f"the {provider} mock cannot be imported ({'; '.join(problems)})")

    def get(self, provider: str) -> RunningMock:
        """Return the provider's mock, serving it on a free loopback port on first use."""
        core = self.core(provider)
        with self._lock:
            running = self._running.get(provider)
            if running is None:
                server = core.server(host=self._host, port=0)
                server.start()
                running = RunningMock(provider, core, server, _mock_api_key(core))
                self._running[provider] = running
            return running

    def started(self) -> dict[str, RunningMock]:
        """Return the mocks currently served."""
        with self._lock:
            return dict(self._running)

    def close(self) -> None:
        """Stop every served mock and release what the mocks hold (a real runtime's sandboxes)."""
        with self._lock:
            running, self._running = list(self._running.values()), {}
            cores, self._cores = list(self._cores.values()), {}
        for mock in running:
            mock.server.stop()
        for core in cores:
            core.close()
