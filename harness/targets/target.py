"""What the contracts run against: parse ``--target`` strings into :class:`Target` objects.

Accepted forms (see :data:`ACCEPTED_FORMS`): ``mock`` (in-process threaded mocks, the default),
``tensorlake:URL`` and ``opensandbox:URL`` (any server speaking that API), ``tensorlake-cloud`` (the real
TensorLake service, only with ``TENSORLAKE_API_KEY`` set) and ``policy:MODULE:ATTR`` (an alternative
network-policy engine). A target offers, per provider, some of three capabilities: ``api`` (a base URL),
``admin`` (the ``/_mock`` admin API: faults, clock, journal) and ``engine`` (a policy engine speaking the
JSON protocol). Contracts declare what they need; the plugin skips the others with the reason.

A URL target is a server the run did not start: :mod:`harness.targets.live` says what the run may do to it
(the preflight, a tenant of its own, read-only admin use unless ``allow_reset``, and the state put back after
an ``allow_reset`` run).

Engine loading lives in :mod:`harness.targets.engines`, the in-process mocks in :mod:`harness.targets.mocks` and the
shared constants in :mod:`harness.targets.common`; their public names are re-exported here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from harness.targets.common import (
    API_KEY_ENV,
    CAPABILITIES,
    DEFAULT_API_KEY,
    MOCK_KEY_ENV,
    PROVIDERS,
    TENSORLAKE_CLOUD_URL,
    Capability,
    TargetError,
    import_object,
    sdk_env,
)
from harness.targets.engines import ENGINE_METHODS, check_engine, load_engine
from harness.targets.live import ReadOnlyAdminClient, Saved, put_back, reset_refusal, save
from harness.targets.mocks import MOCK_CLASSES, MockStack, RunningMock
from mockserver.asgi import clients

if TYPE_CHECKING:
    from mockserver.admin.client import AdminClient
    from mockserver.service import HttpMock

__all__ = [
    "ACCEPTED_FORMS",
    "CAPABILITIES",
    "DEFAULT_API_KEY",
    "ENGINE_METHODS",
    "MOCK_CLASSES",
    "PROVIDERS",
    "TENSORLAKE_CLOUD_URL",
    "Capability",
    "MockStack",
    "RunningMock",
    "Target",
    "TargetError",
    "check_engine",
    "load_engine",
    "parse_target",
    "sdk_env",
]

TargetKind = Literal["mock", "url", "cloud", "policy"]

ACCEPTED_FORMS = """accepted --target forms:
  mock                 in-process threaded mocks of both providers (the default)
  tensorlake:URL       any server speaking the TensorLake API at URL (key from TENSORLAKE_API_KEY)
  opensandbox:URL      any server speaking the OpenSandbox API at URL, without /v1 (key from OPEN_SANDBOX_API_KEY)
  tensorlake-cloud     the real TensorLake service; needs TENSORLAKE_API_KEY, skipped without it
  policy:MODULE:ATTR   a network-policy engine object (or class) importable as MODULE.ATTR"""

#: Where the reference policy engines live, used as the ``mock`` target's engines.
REFERENCE_ENGINES: dict[str, str] = {
    "tensorlake": "contracts.tensorlake_adapter:reference_engine",
    "opensandbox": "contracts.opensandbox_adapter:reference_engine",
}


# --- targets ------------------------------------------------------------------------------------------


class Target:
    """A parsed ``--target``: which providers and capabilities it offers and how to start and stop it."""

    def __init__(
        self,
        spec: str,
        kind: TargetKind,
        *,
        urls: Mapping[str, str] | None = None,
        engine: Any = None,
        api_keys: Mapping[str, str] | None = None,
        unavailable: Mapping[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.kind: TargetKind = kind
        self._urls: dict[str, str] = dict(urls or {})
        self._engine = engine
        self._api_keys: dict[str, str] = dict(api_keys or {})
        self._unavailable: dict[str, str] = dict(unavailable or {})
        self._admin: dict[str, bool] = {}
        self.admin_token: str | None = None
        self._engines: dict[str, Any] = {}
        self._mocks: MockStack | None = None
        self._own_mocks = False
        self._container: Any = None
        self._started = False
        self._start_error: str | None = None
        self._use_container = False
        self._given_mocks: MockStack | None = None
        self._lock = threading.RLock()
        #: Whether the run may reset, move the clock of and arm faults on a server it did not start.
        self.allow_reset = False
        self._saved: dict[str, Saved] = {}
        self._own_tenant: set[str] = set()

    def __repr__(self) -> str:
        return f"Target({self.spec!r})"

    # --- static description ----------------------------------------------------------------------------

    @property
    def providers(self) -> frozenset[str]:
        """Return the providers this target covers with at least one capability."""
        if self.kind == "mock":
            return frozenset(PROVIDERS)
        if self.kind == "policy":
            return frozenset({self._engine.kind})
        return frozenset(self._urls)

    @property
    def owned(self) -> bool:
        """Tell whether the run starts (and so owns) what it checks: the mock target, in-process or in a container."""
        return self.kind == "mock"

    def reset_reason(self) -> str | None:
        """Return why the run may not reset this target, move its clock or arm faults on it (None when it may)."""
        if self.owned or self.allow_reset:
            return None
        return reset_refusal(self.spec)

    @property
    def started(self) -> bool:
        """Tell whether :meth:`start` has run (and :meth:`stop` has not)."""
        return self._started

    def capabilities(self, provider: str) -> frozenset[Capability]:
        """Return what the target offers for ``provider`` (``admin`` is probed when a URL target starts)."""
        if provider not in self.providers:
            return frozenset()
        if self.kind == "mock":
            return frozenset(CAPABILITIES)
        if self.kind == "policy":
            return frozenset({"engine"})
        caps: set[Capability] = {"api"}
        if self._admin.get(provider):
            caps.add("admin")
        return frozenset(caps)

    def skip_reason(self, provider: str, requires: Sequence[str] = ("api",)) -> str | None:
        """Return why a contract for ``provider`` needing ``requires`` cannot run here, or None."""
        if provider in self._unavailable:
            return self._unavailable[provider]
        if provider not in self.providers:
            covered = ", ".join(sorted(self.providers)) or "nothing"
            return f"target {self.spec!r} does not cover {provider} (it covers {covered})"
        if "admin" in requires and self.kind == "url":
            self.ensure_started()  # probes the admin API
        caps = self.capabilities(provider)
        for need in requires:
            if need not in caps:
                return self._missing(provider, need)
        if "admin" in requires:
            return self.reset_reason()
        return None

    def _missing(self, provider: str, need: str) -> str:
        """Explain a missing capability."""
        if need == "api":
            return f"target {self.spec!r} is a {provider} policy engine, not an API server"
        if need == "admin":
            return (
                f"target {self.spec!r} has no /_mock admin API for {provider}; "
                "fault, clock and journal contracts need a sandproof mock"
            )
        if need == "engine":
            return f"target {self.spec!r} offers no {provider} policy engine; use --target mock or policy:MODULE:ATTR"
        return f"unknown capability {need!r}; expected one of {', '.join(CAPABILITIES)}"

    def describe(self) -> str:
        """Return a one-line description of what the target offers."""
        parts = []
        for provider in PROVIDERS:
            reason = self._unavailable.get(provider)
            caps = self.capabilities(provider)
            if reason:
                parts.append(f"{provider}: skipped ({reason})")
            elif caps:
                url = f" {self._urls[provider]}" if provider in self._urls else ""
                tenant = " as a tenant of its own" if provider in self._own_tenant else ""
                parts.append(f"{provider}:{url} [{', '.join(c for c in CAPABILITIES if c in caps)}]{tenant}")
        return f"{self.spec}: " + ("; ".join(parts) or "nothing")

    # --- running ---------------------------------------------------------------------------------------

    def configure(
        self, *, container: bool = False, mocks: MockStack | None = None, allow_reset: bool | None = None
    ) -> Target:
        """Set how :meth:`start` runs mocks (in a container, or on ``mocks``, a stack it does not own) and whether
        the run may reset a server it did not start (``allow_reset``; unchanged when None)."""
        if container and self.kind != "mock":
            raise TargetError(f"--sandproof-container only applies to the mock target, not {self.spec!r}")
        self._use_container = container
        self._given_mocks = mocks
        if allow_reset is not None:
            self.allow_reset = allow_reset
        return self

    def start(self, *, container: bool | None = None, mocks: MockStack | None = None) -> Target:
        """Start what the target needs (mocks, or the admin probe of a URL target); a no-op when started."""
        if container is not None or mocks is not None:
            self.configure(
                container=self._use_container if container is None else container,
                mocks=mocks if mocks is not None else self._given_mocks,
            )
        return self.ensure_started()

    def ensure_started(self) -> Target:
        """Start the target once; a failed start raises the same :class:`TargetError` every time."""
        with self._lock:
            if self._started:
                return self
            if self._start_error is not None:
                raise TargetError(self._start_error)
            try:
                if self.kind == "mock":
                    self._start_mocks(self._use_container, self._given_mocks)
                elif self.kind == "url":
                    self._probe_admin()
                    if self.allow_reset:
                        self._save()
            except Exception as exc:
                self._start_error = f"target {self.spec!r} did not start: {type(exc).__name__}: {exc}"
                if isinstance(exc, TargetError):
                    self._start_error = str(exc)
                raise TargetError(self._start_error) from exc
            self._started = True
            return self

    def _start_mocks(self, container: bool, mocks: MockStack | None) -> None:
        """Serve both mocks and record their URLs."""
        if container:
            from harness.targets.containers import MockContainer

            self._container = MockContainer()
            try:
                self._container.start()
            except Exception as exc:
                self._container = None
                raise TargetError(f"cannot start the sandproof mock container: {exc}") from exc
            self._urls = dict(self._container.urls)
            self._api_keys = {p: self._container.spec.api_key for p in PROVIDERS}
            self.admin_token = self._container.spec.admin_token
            self._admin = dict.fromkeys(PROVIDERS, True)
            return
        stack = mocks if mocks is not None else MockStack()
        try:
            served = {provider: stack.get(provider) for provider in PROVIDERS}
        except Exception:
            if mocks is None:
                stack.close()
            raise
        self._own_mocks = mocks is None
        self._mocks = stack
        for provider, running in served.items():
            self._urls[provider] = running.url
            self._api_keys[provider] = running.api_key
            self._admin[provider] = True

    def preflight(self) -> None:
        """Check once, before any contract runs, that the target can be reached; raise :class:`TargetError`.

        A URL must not end in ``/v1``, must answer and must take the API key (:func:`harness.targets.live.preflight`;
        when it also takes a key of the run's own, the run uses that one: a tenant of its own); the cloud must
        accept a connection; ``--container`` needs a Docker engine. A setup mistake is then one line and exit
        status 2, not a failure per contract.
        """
        if self.kind == "mock" and self._use_container:
            from harness.targets.containers import docker_status

            ok, detail = docker_status()
            if not ok:
                raise TargetError(f"--container needs a Docker engine: {detail}")
        if self.kind == "url":
            from harness.targets.live import preflight

            for provider, url in self._urls.items():
                own = preflight(self.spec, provider, url, self._api_keys.get(provider))
                if own is not None:
                    self._api_keys[provider] = own
                    self._own_tenant.add(provider)
            return
        if self.kind != "cloud":
            return
        import httpx

        for provider, url in self._urls.items():
            try:
                with clients.client(timeout=5.0, trust_env=False) as http:
                    http.get(url)
            except httpx.HTTPError as exc:
                raise TargetError(
                    f"target {self.spec!r}: cannot reach the {provider} server at {url}: {type(exc).__name__}: {exc}"
                ) from exc

    def _save(self) -> None:
        """Save the state of every admin-serving URL the run may reset (put back by :meth:`stop`)."""
        from mockserver.admin.client import AdminClient

        for provider, url in self._urls.items():
            if self._admin.get(provider) and provider not in self._saved:
                client = AdminClient(url, timeout=30, token=self.admin_token)
                try:
                    self._saved[provider] = save(client)
                finally:
                    client.close()

    def _put_back(self) -> None:
        """Put back what :meth:`_save` saved; raise :class:`TargetError` naming what could not be."""
        from mockserver.admin.client import AdminClient

        failed = []
        for provider, saved in list(self._saved.items()):
            client = AdminClient(self._urls[provider], timeout=30, token=self.admin_token)
            try:
                put_back(client, saved)
            except Exception as exc:
                failed.append(f"{provider}: {type(exc).__name__}: {exc}")
            finally:
                client.close()
                del self._saved[provider]
        if failed:
            raise TargetError(f"target {self.spec!r}: could not put its state back: {'; '.join(failed)}")

    def _probe_admin(self) -> None:
        """Ask each URL whether it serves the ``/_mock`` admin API."""
        from mockserver.admin.client import AdminClient

        for provider, url in self._urls.items():
            client = AdminClient(url, timeout=5, token=self.admin_token)
            try:
                self._admin[provider] = client.available()
            finally:
                client.close()

    def stop(self) -> None:
        """Stop whatever :meth:`start` started; the target can start again afterwards."""
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        """Put back a reset server's state, stop the container or owned mocks and forget per-run state."""
        try:
            self._put_back()
        finally:
            self._stop_owned()

    def _stop_owned(self) -> None:
        """Stop the container or owned mocks and forget per-run state."""
        self._start_error = None
        if self._container is not None:
            container, self._container = self._container, None
            container.stop()
        if self._mocks is not None and self._own_mocks:
            self._mocks.close()
        if self.kind == "mock":
            self._urls = {}
            self._admin = {}
        self._mocks = None
        self._started = False

    @contextmanager
    def running(self, *, container: bool | None = None, mocks: MockStack | None = None) -> Iterator[Target]:
        """Start the target for the ``with`` block, then stop it."""
        self.start(container=container, mocks=mocks)
        try:
            yield self
        finally:
            self.stop()

    def __enter__(self) -> Target:
        return self.ensure_started()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- what contracts use ----------------------------------------------------------------------------

    def _require(self, provider: str, need: Capability) -> None:
        """Raise :class:`TargetError` unless ``provider`` offers ``need`` right now."""
        reason = self.skip_reason(provider, (need,))
        if reason is None and need in ("api", "admin"):
            self.ensure_started()
            if need == "admin" and not self._admin.get(provider):
                reason = self._missing(provider, "admin")
        if reason is not None:
            raise TargetError(reason)

    def known_urls(self) -> dict[str, str]:
        """Return the base URLs known now, without starting anything (a URL target's are known when parsed)."""
        return dict(self._urls)

    @property
    def urls(self) -> dict[str, str]:
        """Return the base URL per provider, starting the target if needed."""
        if self.kind != "policy" and self.providers:
            self.ensure_started()
        return dict(self._urls)

    def url(self, provider: str) -> str:
        """Return ``provider``'s base URL."""
        self._require(provider, "api")
        return self._urls[provider]

    def api_key(self, provider: str) -> str | None:
        """Return the API key the SDK should send to ``provider``."""
        if self.kind == "mock":
            self.ensure_started()
        return self._api_keys.get(provider)

    def admin_available(self, provider: str) -> bool:
        """Tell whether ``provider`` serves the ``/_mock`` admin API (to read, at least)."""
        if self.kind in ("mock", "url") and provider in self.providers:
            self.ensure_started()
        return bool(self._admin.get(provider))

    def admin_writable(self, provider: str) -> bool:
        """Tell whether the run may reset ``provider``, move its clock and arm faults (see :meth:`reset_reason`)."""
        return self.reset_reason() is None and self.admin_available(provider)

    def admin_client(self, provider: str) -> AdminClient:
        """Return an HTTP client for ``provider``'s ``/_mock`` admin API (close it when done).

        On a server the run did not start, without ``allow_reset``, it is a
        :class:`~harness.targets.live.ReadOnlyAdminClient`: every call that would change the server raises.
        """
        reason = self.skip_reason(provider, ("api",))
        if reason is None:
            self.ensure_started()
            if not self._admin.get(provider):
                reason = self._missing(provider, "admin")
        if reason is not None:
            raise TargetError(reason)
        if self.reset_reason() is not None:
            return ReadOnlyAdminClient(self._urls[provider], self.spec, token=self.admin_token)
        from mockserver.admin.client import AdminClient

        return AdminClient(self._urls[provider], token=self.admin_token)

    def mock(self, provider: str) -> HttpMock | None:
        """Return the in-process mock object for ``provider``, or None when the target is not one."""
        if self.kind != "mock" or provider not in self.providers:
            return None
        self.ensure_started()
        return self._mocks.get(provider).mock if self._mocks is not None else None

    def engine(self, provider: str) -> Any:
        """Return ``provider``'s policy engine: the loaded one, or the reference engine for ``mock``."""
        self._require(provider, "engine")
        if self.kind == "policy":
            return self._engine
        if provider not in self._engines:
            self._engines[provider] = import_object(REFERENCE_ENGINES[provider])
        return self._engines[provider]

    def sdk_env(self, provider: str) -> dict[str, str]:
        """Return the environment variables that point ``provider``'s SDK at this target."""
        self._require(provider, "api")
        return sdk_env(provider, self._urls[provider], self._api_keys.get(provider), cloud=self.kind == "cloud")


# --- parsing ------------------------------------------------------------------------------------------


def parse_target(spec: str | None, environ: Mapping[str, str] | None = None) -> Target:
    """Parse a ``--target`` string; raise :class:`TargetError` naming the accepted forms."""
    env = os.environ if environ is None else environ
    text = (spec or "").strip()
    if not text:
        raise TargetError(f"empty target\n{ACCEPTED_FORMS}")
    if text == "mock":
        return Target("mock", "mock")
    if text == "tensorlake-cloud":
        key = env.get("TENSORLAKE_API_KEY", "").strip()
        refused = _not_a_cloud_key(key, env)
        if refused:
            return Target(text, "cloud", unavailable={"tensorlake": refused})
        return Target(text, "cloud", urls={"tensorlake": TENSORLAKE_CLOUD_URL}, api_keys={"tensorlake": key})
    head, sep, rest = text.partition(":")
    if head in PROVIDERS:
        if not sep or not rest.strip():
            extra = " (or tensorlake-cloud for the real service)" if head == "tensorlake" else ""
            raise TargetError(f"target {text!r} needs a URL: {head}:http://HOST:PORT{extra}\n{ACCEPTED_FORMS}")
        url = _check_url(text, rest.strip())
        keys = {head: env[API_KEY_ENV[head]]} if env.get(API_KEY_ENV[head]) else {}
        return Target(text, "url", urls={head: url}, api_keys=keys)
    if head == "policy":
        try:
            engine = load_engine(rest)
        except TargetError as exc:
            raise TargetError(f"{exc}\n{ACCEPTED_FORMS}") from exc
        return Target(text, "policy", engine=engine)
    raise TargetError(f"unknown target {text!r}\n{ACCEPTED_FORMS}")


def _not_a_cloud_key(key: str, env: Mapping[str, str]) -> str | None:
    """Return why ``key`` must not be sent to the real TensorLake cloud, or None when it may be."""
    if not key:
        return "TENSORLAKE_API_KEY is not set; the tensorlake-cloud contracts run only with a real key"
    if key == DEFAULT_API_KEY or key == env.get(MOCK_KEY_ENV):
        return (
            "TENSORLAKE_API_KEY is the key `sandproof env` exports for the mocks, not a cloud key; "
            "the tensorlake-cloud contracts run only with a real key"
        )
    api_url = env.get("TENSORLAKE_API_URL", "").strip()
    host = urlsplit(api_url).hostname or ""
    if api_url and host != urlsplit(TENSORLAKE_CLOUD_URL).hostname and not host.endswith(".tensorlake.ai"):
        return (
            f"TENSORLAKE_API_URL points at {api_url}, not the TensorLake cloud (set by `sandproof env`?); "
            "unset it to run the tensorlake-cloud contracts"
        )
    return None


def _check_url(spec: str, url: str) -> str:
    """Return ``url`` without a trailing slash, or raise when it is not an http(s) URL with a host."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetError(f"target {spec!r}: invalid URL {url!r}: {exc}\n{ACCEPTED_FORMS}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f"target {spec!r}: {url!r} is not an http:// or https:// URL with a host\n{ACCEPTED_FORMS}")
    if parts.query or parts.fragment:
        raise TargetError(f"target {spec!r}: the URL must not carry a query or fragment\n{ACCEPTED_FORMS}")
    if port == 0:
        raise TargetError(f"target {spec!r}: port 0 is not a server port\n{ACCEPTED_FORMS}")
    return url.rstrip("/")
