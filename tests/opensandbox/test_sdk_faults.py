"""Every catalogued fault, triggered through the core fault API, and the SDK 1.1.1 reaction the notes record."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from opensandbox import Sandbox, SandboxManager
from opensandbox.config import ConnectionConfig
from opensandbox.exceptions import (
    InvalidArgumentException,
    SandboxApiException,
    SandboxConnectionException,
    SandboxInternalException,
    SandboxRateLimitException,
    SandboxReadyTimeoutException,
    SandboxTimeoutException,
)
from opensandbox.models.sandboxes import SandboxFilter

from mockserver.asgi.server import MockServer
from mockserver.core import FaultRule
from mockserver.opensandbox import OpenSandboxMock

from .conftest import API_KEY, run, sdk_config

Install = Callable[[OpenSandboxMock, str], FaultRule | None]
Call = Callable[[Sandbox, SandboxManager], Awaitable[Any]]


@dataclass(frozen=True)
class Case:
    """One fault, the SDK call it hits and the reaction expected."""

    install: Install
    call: Call
    error: type[Exception] | None
    status: int | None = None
    code: str | None = None
    fired: int | None = None
    check: Callable[[Any, OpenSandboxMock, str], None] | None = None


async def _status(sb: Sandbox, mgr: SandboxManager) -> Any:
    done = await sb.commands.run("echo x")
    return await sb.commands.get_command_status(str(done.id))


async def _info(sb: Sandbox, mgr: SandboxManager) -> Any:
    return await sb.get_info()


async def _run(sb: Sandbox, mgr: SandboxManager) -> Any:
    return await sb.commands.run("echo partial; sleep 1; echo more")


def _stdout(execution: Any) -> str:
    return "".join(o.text for o in execution.logs.stdout)


def _check_partial(result: Any, mock: OpenSandboxMock, sid: str) -> None:
    assert result.exit_code is None and result.complete is None and _stdout(result) == "partial\n"


def _check_malformed(result: Any, mock: OpenSandboxMock, sid: str) -> None:
    assert result.id is None and result.exit_code is None and _stdout(result) == ""


def _check_exit3(result: Any, mock: OpenSandboxMock, sid: str) -> None:
    assert result.exit_code == 3 and result.error.value == "3"


def _check_oom(result: Any, mock: OpenSandboxMock, sid: str) -> None:
    assert result.status.state == "Failed" and "137" in (result.status.message or "")


CASES: dict[str, Case] = {
    "F1-status-404-evicted": Case(
        lambda m, s: m.catalogue.command_not_found_on_poll(s),
        _status,
        SandboxApiException,
        404,
        "INVALID_REQUEST_BODY",
        1,
    ),
    "F2-status-410": Case(
        lambda m, s: m.catalogue.status_410_on_poll(s), _status, SandboxApiException, 410, "UNEXPECTED_RESPONSE", 1
    ),
    "F3-status-404-plain-text": Case(
        lambda m, s: m.catalogue.plain_text_404(sandbox_id=s), _status, InvalidArgumentException, fired=1
    ),
    "F4-502-three-times-then-ok": Case(
        lambda m, s: m.catalogue.bad_gateway_on_poll(s, times=3), _status, None, fired=3
    ),
    "F5-502-always": Case(
        lambda m, s: m.catalogue.bad_gateway_on_poll(s, times=None),
        _status,
        SandboxApiException,
        502,
        "UNEXPECTED_RESPONSE",
        4,
    ),
    "F7-500-json": Case(
        lambda m, s: m.catalogue.server_error(sandbox_id=s), _info, SandboxApiException, 500, "RUNTIME_ERROR", 1
    ),
    "F8-execd-401": Case(
        lambda m, s: m.catalogue.execd_unauthorized(sandbox_id=s),
        _status,
        SandboxApiException,
        401,
        "UNEXPECTED_RESPONSE",
        1,
    ),
    "F9-status-499": Case(
        lambda m, s: m.catalogue.nonstandard_status(499, sandbox_id=s), _info, InvalidArgumentException
    ),
    "F10-submit-502": Case(
        lambda m, s: m.catalogue.submit_502(s), _run, SandboxApiException, 502, "BACKEND_CONNECTION_FAILED", 1
    ),
    "F11-submit-400": Case(
        lambda m, s: m.catalogue.submit_error(400, sandbox_id=s),
        _run,
        SandboxApiException,
        400,
        "INVALID_REQUEST_BODY",
        1,
    ),
    "F12-sse-content-type": Case(
        lambda m, s: m.catalogue.sse_wrong_content_type(s), _run, SandboxConnectionException, fired=1
    ),
    "F15-sse-malformed": Case(lambda m, s: m.catalogue.sse_malformed(s), _run, None, fired=1, check=_check_malformed),
    "F16-non-zero-exit": Case(lambda m, s: None, lambda sb, mgr: sb.commands.run("exit 3"), None, check=_check_exit3),
    "F17-null-expires-at": Case(lambda m, s: m.catalogue.null_expires_at(s), _info, InvalidArgumentException),
    "F18-missing-entrypoint": Case(lambda m, s: m.catalogue.missing_entrypoint(s), _info, SandboxInternalException),
    "F24-422": Case(
        lambda m, s: m.catalogue.validation_422("GET", f"*/sandboxes/{s}"),
        _info,
        SandboxApiException,
        422,
        "UNEXPECTED_RESPONSE",
        1,
    ),
    "F25-pause-409": Case(
        lambda m, s: m.catalogue.conflict("pause", s),
        lambda sb, mgr: sb.pause(),
        SandboxApiException,
        409,
        "KUBERNETES::INVALID_STATE",
        1,
    ),
    "F25-kill-409": Case(
        lambda m, s: m.catalogue.conflict("delete", s),
        lambda sb, mgr: sb.kill(),
        SandboxApiException,
        409,
        "KUBERNETES::INVALID_STATE",
        1,
    ),
    "F26-401-invalid-key": Case(
        lambda m, s: m.catalogue.unauthorized(), _info, SandboxApiException, 401, "INVALID_API_KEY", 1
    ),
    "F29-download-404": Case(
        lambda m, s: m.catalogue.download_not_found(s),
        lambda sb, mgr: sb.files.read_file("/etc/hostname"),
        SandboxApiException,
        404,
        "FILE_NOT_FOUND",
        1,
    ),
    "F31-oom-failed": Case(lambda m, s: m.catalogue.oom_kill(s), _info, None, check=_check_oom),
    "F31-expired-404": Case(
        lambda m, s: m.catalogue.expire(s), _info, SandboxApiException, 404, "DOCKER::SANDBOX_NOT_FOUND"
    ),
    "F32-delete-unknown": Case(
        lambda m, s: None,
        lambda sb, mgr: mgr.kill_sandbox("no-such-sandbox"),
        SandboxApiException,
        404,
        "DOCKER::SANDBOX_NOT_FOUND",
    ),
    "F34-plain-text-500": Case(
        lambda m, s: m.catalogue.plain_text_500(sandbox_id=s), _info, InvalidArgumentException, fired=1
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fault_reaction_in_process(mock: OpenSandboxMock, name: str) -> None:
    case = CASES[name]
    cfg = sdk_config(mock, "inproc-direct")

    async def scenario() -> None:
        sb = await Sandbox.create("python:3.11", connection_config=cfg)
        mgr = await SandboxManager.create(connection_config=cfg)
        rule = case.install(mock, sb.id)
        try:
            if case.error is None:
                result = await case.call(sb, mgr)
                if case.check is not None:
                    case.check(result, mock, sb.id)
            else:
                with pytest.raises(case.error) as caught:
                    await case.call(sb, mgr)
                exc = caught.value
                if case.status is not None:
                    assert isinstance(exc, SandboxApiException) and exc.status_code == case.status
                if case.code is not None:
                    assert isinstance(exc, SandboxApiException) and exc.error.code == case.code
            if case.fired is not None:
                assert rule is not None and rule.fired == case.fired
        finally:
            await sb.close()
            await mgr.close()

    run(scenario())


def _create(cfg: ConnectionConfig, **kwargs: Any) -> Awaitable[Sandbox]:
    return Sandbox.create("python:3.11", connection_config=cfg, **kwargs)


def test_f6_retry_after_is_honoured(mock: OpenSandboxMock) -> None:
    cfg = sdk_config(mock, "inproc-direct")

    async def scenario() -> float:
        sb = await _create(cfg)
        mock.catalogue.unavailable(sandbox_id=sb.id, retry_after=1)
        start = time.monotonic()
        assert (await sb.get_info()).id == sb.id
        await sb.close()
        return time.monotonic() - start

    assert run(scenario()) >= 0.9


@pytest.mark.parametrize("times", [3, None])
def test_f19_f21_pending_pod_and_ping_during_create(mock: OpenSandboxMock, times: int | None) -> None:
    cfg = sdk_config(mock, "inproc-direct")
    pending = mock.catalogue.pending_pod(times=times)
    ping = mock.catalogue.ping_unavailable(times=3)

    async def scenario() -> None:
        if times is None:
            with pytest.raises(SandboxReadyTimeoutException):
                await _create(cfg, ready_timeout=timedelta(seconds=0.6))
            assert mock.sandbox_ids() == []
            mock.journal.assert_called("DELETE", "/v1/sandboxes/*")
        else:
            sb = await _create(cfg)
            assert pending.fired == 3 and ping.fired == 3
            await sb.close()

    run(scenario())


def test_f20_endpoint_error_fails_fast_and_deletes(mock: OpenSandboxMock) -> None:
    cfg = sdk_config(mock, "inproc-direct")
    mock.catalogue.endpoint_not_found()
    with pytest.raises(SandboxApiException) as caught:
        run(_create(cfg))
    assert caught.value.status_code == 404 and caught.value.error.code == "DOCKER::SANDBOX_NOT_FOUND"
    assert mock.sandbox_ids() == []
    mock.journal.assert_called("DELETE", "/v1/sandboxes/*", times=1)


def test_f8_ping_401_fails_fast_and_deletes(mock: OpenSandboxMock) -> None:
    cfg = sdk_config(mock, "inproc-direct")
    mock.catalogue.execd_unauthorized(path="*/44772/ping")
    with pytest.raises(SandboxApiException) as caught:
        run(_create(cfg))
    assert caught.value.status_code == 401 and mock.sandbox_ids() == []


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (429, SandboxRateLimitException, "KUBERNETES::POOL_CAPACITY_EXHAUSTED"),
        (504, SandboxApiException, "UNEXPECTED_RESPONSE"),
        (503, SandboxApiException, "UNEXPECTED_RESPONSE"),
    ],
)
def test_f22_f23_create_errors_are_not_retried(
    mock: OpenSandboxMock, status: int, error: type[Exception], code: str
) -> None:
    cfg = sdk_config(mock, "inproc-direct")
    rule = mock.catalogue.create_rate_limited() if status == 429 else mock.catalogue.create_error(status)
    with pytest.raises(error) as caught:
        run(_create(cfg))
    exc = caught.value
    assert isinstance(exc, SandboxApiException) and exc.status_code == status and exc.error.code == code
    if isinstance(exc, SandboxRateLimitException):
        assert exc.retry_after == timedelta(seconds=1)
    assert rule.fired == 1 and mock.sandbox_ids() == []


def test_f26_real_auth_errors(mock: OpenSandboxMock) -> None:
    for key, code in (("wrong", "INVALID_API_KEY"), (None, "MISSING_API_KEY")):
        cfg = mock.connection_config(in_process=True, api_key=key)
        with pytest.raises(SandboxApiException) as caught:
            run(_create(cfg))
        assert caught.value.status_code == 401 and caught.value.error.code == code
        assert caught.value.request_id


def test_f31_kubernetes_profile_pending_then_ready() -> None:
    from mockserver.core import VirtualClock

    mock = OpenSandboxMock(
        seed=3, api_key=API_KEY, profile="kubernetes", clock=VirtualClock("wall"), pending_seconds=0.5
    )
    cfg = sdk_config(mock, "inproc-direct")

    async def scenario() -> None:
        start = time.monotonic()
        sb = await _create(cfg)
        assert time.monotonic() - start >= 0.4
        assert mock.journal.entries(path="*/endpoints/*", status=404)
        mgr = await SandboxManager.create(connection_config=cfg)
        await sb.pause()
        assert (await sb.get_info()).status.state == "Pausing"
        await sb.kill()
        await sb.close()
        await mgr.close()

    run(scenario())


# -- faults that need a real socket ------------------------------------------------------------


@pytest.fixture
def socket_cfg(mock: OpenSandboxMock, server: MockServer) -> Callable[..., ConnectionConfig]:
    return lambda **kw: sdk_config(mock, "socket-direct", server.url, **kw)


def test_f13_stream_cut_returns_partial_output(
    mock: OpenSandboxMock, socket_cfg: Callable[..., ConnectionConfig]
) -> None:
    async def scenario() -> Any:
        sb = await _create(socket_cfg())
        truncated = mock.catalogue.sse_truncated(sb.id)
        try:
            partial = await sb.commands.run("echo partial; echo more")
            assert truncated.fired == 1
            mock.catalogue.sse_cut(sb.id, after_chunks=2)
            with pytest.raises(SandboxConnectionException):
                await sb.commands.run("echo partial; echo more")
            return partial
        finally:
            await sb.close()

    _check_partial(run(scenario()), mock, "")


def test_f14_stalled_stream_blocks_until_dropped(
    mock: OpenSandboxMock, socket_cfg: Callable[..., ConnectionConfig]
) -> None:
    async def scenario() -> float:
        sb = await _create(socket_cfg())
        mock.catalogue.sse_stall(sb.id, after_chunks=1, seconds=0.6)
        start = time.monotonic()
        try:
            with pytest.raises(SandboxConnectionException):
                await sb.commands.run("echo partial")
            return time.monotonic() - start
        finally:
            await sb.close()

    assert run(scenario()) >= 0.5


def test_f27_slow_get_is_retried_and_slow_post_times_out(
    mock: OpenSandboxMock, socket_cfg: Callable[..., ConnectionConfig]
) -> None:
    cfg = socket_cfg(request_timeout=timedelta(seconds=0.3))

    async def scenario() -> None:
        sb = await _create(cfg)
        rule = mock.catalogue.slow(0.6, "GET", f"*/sandboxes/{sb.id}")
        assert (await sb.get_info()).id == sb.id
        assert rule.fired == 1
        mock.catalogue.slow(0.6, "POST", "*/sandboxes/*/pause")
        with pytest.raises(SandboxTimeoutException):
            await sb.pause()
        await sb.close()

    run(scenario())


def test_f28_reset_get_retried_sse_not(mock: OpenSandboxMock, socket_cfg: Callable[..., ConnectionConfig]) -> None:
    async def scenario() -> None:
        sb = await _create(socket_cfg())
        rule = mock.catalogue.connection_reset("GET", f"*/sandboxes/{sb.id}")
        assert (await sb.get_info()).id == sb.id and rule.fired == 1
        mock.catalogue.connection_reset("POST", "*/44772/command", sandbox_id=sb.id)
        with pytest.raises(SandboxConnectionException):
            await sb.commands.run("echo x")
        await sb.close()

    run(scenario())


def test_f30_keepalive_shorter_than_pool(mock: OpenSandboxMock) -> None:
    with mock.catalogue.keepalive_server(1.0) as srv:
        cfg = mock.connection_config(srv.url)

        async def scenario() -> None:
            sb = await _create(cfg)
            time.sleep(1.3)
            assert (await sb.commands.run("echo after-idle")).exit_code == 0
            time.sleep(1.3)
            assert (await sb.get_info()).status.state == "Running"
            await sb.close()

        run(scenario())
    assert mock.journal.entries(method="POST", path="/direct/*/44772/command", status=200)


def test_f33_create_timeout_leaves_listable_orphan(
    mock: OpenSandboxMock, socket_cfg: Callable[..., ConnectionConfig]
) -> None:
    cfg = socket_cfg(request_timeout=timedelta(seconds=0.3))
    mock.catalogue.create_timeout(0.8)

    async def scenario() -> None:
        with pytest.raises(SandboxTimeoutException):
            await _create(cfg, metadata={"run": "orphan-1"})
        mgr = await SandboxManager.create(connection_config=cfg)
        found = await mgr.list_sandbox_infos(SandboxFilter(metadata={"run": "orphan-1"}))
        assert len(found.sandbox_infos) == 1
        await mgr.kill_sandbox(found.sandbox_infos[0].id)
        await mgr.close()

    run(scenario())
    assert mock.sandbox_ids(run="orphan-1") == []
