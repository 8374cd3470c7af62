"""The plugin's fixtures, and the export of the mocks' SDK environment for a whole run (``--sandproof-sdk-env``).

The mocks are imported and started on a fixture's first use, never when this module is imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from harness.plugin import guard
from harness.plugin.state import STATE_KEY, SandproofState, sandproof_state
from harness.targets import PROVIDERS, RunningMock, Target, TargetError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "cloud_guard",
    "export_sdk_env",
    "opensandbox_asgi",
    "opensandbox_mock",
    "sandproof_runtime",
    "sandproof_target",
    "tensorlake_mock",
    "tensorlake_sdk_args",
]


def export_sdk_env(state: SandproofState) -> None:
    """Serve both mocks now and export their SDK environment for the whole run (restored at the end); once.

    When (:mod:`.sdkenv`): at the start with ``--sandproof-sdk-env``, else before the first test module
    that imports an SDK at its top is imported.
    """
    if state.runtime_problem is not None or state.sdk_env_exported:
        return  # the tests that would use them are skipped with the reason, or it is done
    state.sdk_env_exported = True
    try:
        running = [state.mocks().get(provider) for provider in PROVIDERS]
    except TargetError as exc:
        raise pytest.UsageError(f"--sandproof-sdk-env: {exc}") from exc
    patch = pytest.MonkeyPatch()
    for mock in running:
        for name, value in mock.env.items():
            patch.setenv(name, value)
    state.on_close(patch.undo)


def _tripwire(state: SandproofState) -> guard.Tripwire:
    """Return the run's tripwire, started on the first guarded test and stopped when the run ends."""
    found = state.tripwire
    if found is None:
        found = state.tripwire = guard.Tripwire()
        state.on_close(found.close)
    assert isinstance(found, guard.Tripwire)
    return found


@pytest.fixture(autouse=True)
def cloud_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """Trap and fail what a test using sandproof's fixtures sends beyond this machine (see :mod:`.guard`)."""
    state = request.config.stash.get(STATE_KEY, None)
    if state is None or not guard.should_guard(request.node, state.target.kind):
        yield
        return
    # A deployment the run was pointed at may live beyond loopback; its URLs are known without starting it, so
    # the guard never preempts the target's preflight.
    target_urls = list(state.target.known_urls().values()) if state.target.kind == "url" else []
    with guard.guarded_env(_tripwire(state), target_urls) as trapped:
        request.node.stash[guard.TRAPPED_KEY] = trapped
        yield
    escaped = trapped.new()  # what setup or teardown sent (the call phase reports its own)
    if escaped:
        pytest.fail(guard.message(escaped), pytrace=False)


@pytest.fixture(scope="session")
def sandproof_target(request: pytest.FixtureRequest) -> Target:
    """Return the run's target (started on first use of a URL, mock or admin client; stopped at the end).

    A URL target is preflighted first (:meth:`Target.preflight`): a setup mistake ends the run with its one
    line and exit status 2 before any contract runs.
    """
    target = sandproof_state(request.config).target
    if target.kind == "url":
        try:
            target.preflight()
        except TargetError as exc:
            pytest.exit(f"sandproof: {exc}", returncode=2)
    return target


def _serve_mock(request: pytest.FixtureRequest, provider: str) -> Iterator[RunningMock]:
    """Yield a freshly reset in-process mock with its SDK environment set, then restore the environment."""
    state = sandproof_state(request.config)
    if state.runtime_problem is not None:
        pytest.skip(state.runtime_problem)
    try:
        running = state.mocks().get(provider)
    except TargetError as exc:
        pytest.fail(str(exc), pytrace=False)
    # A socket server journals a request just after answering it: collect late entries before the reset.
    state.note_unknown_fields(running.mock)
    running.reset()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in running.env.items():
            patch.setenv(name, value)
        try:
            yield running
        finally:
            state.note_unknown_fields(running.mock, request.node.nodeid)


@pytest.fixture(scope="session")
def sandproof_runtime(request: pytest.FixtureRequest) -> str:
    """Return what the in-process mocks run sandboxes on (``emulator`` or ``linux``)."""
    return sandproof_state(request.config).runtime


@pytest.fixture
def tensorlake_mock(request: pytest.FixtureRequest) -> Iterator[RunningMock]:
    """Serve a fresh TensorLake mock (``.url``, ``.mock``, ``.env``) with the SDK env vars set."""
    yield from _serve_mock(request, "tensorlake")


@pytest.fixture
def opensandbox_mock(request: pytest.FixtureRequest) -> Iterator[RunningMock]:
    """Serve a fresh OpenSandbox mock (``.url``, ``.mock``, ``.env``) with the SDK env vars set."""
    yield from _serve_mock(request, "opensandbox")


@pytest.fixture
def tensorlake_sdk_args(tensorlake_mock: RunningMock) -> dict[str, str]:
    """Return ``api_url``/``api_key`` for TensorLake SDK calls on a fresh mock: ``Sandbox.create(**tensorlake_sdk_args)``.

    The SDK reads its environment once, at import; passing these explicitly works whenever it was imported.
    """
    return {"api_url": tensorlake_mock.url, "api_key": tensorlake_mock.api_key}


@pytest.fixture
def opensandbox_asgi(request: pytest.FixtureRequest) -> Iterator[httpx.ASGITransport]:
    """Return an ``httpx.ASGITransport`` into a fresh OpenSandbox mock (the same one ``opensandbox_mock`` serves)."""
    state = sandproof_state(request.config)
    if state.runtime_problem is not None:
        pytest.skip(state.runtime_problem)
    try:
        core = state.mocks().core("opensandbox")
    except TargetError as exc:
        pytest.fail(str(exc), pytrace=False)
    state.note_unknown_fields(core)
    core.reset()
    try:
        yield core.transport()
    finally:
        state.note_unknown_fields(core, request.node.nodeid)
