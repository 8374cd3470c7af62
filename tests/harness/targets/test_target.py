"""Target parsing, capabilities and skip reasons, the policy engine loader, SDK env, the mock stack."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import pytest

from harness.targets import ACCEPTED_FORMS, TargetError, parse_target
from harness.targets import mocks as mock_stack
from harness.targets.common import TENSORLAKE_CLOUD_URL, sdk_env
from harness.targets.engines import check_engine, load_engine
from harness.targets.mocks import MockStack
from mockserver.asgi.server import MockServer
from tests.harness.fakes import FAKE_CLASSES, FakeOpenSandbox


def test_mock_is_the_default_form_and_covers_everything() -> None:
    target = parse_target("mock")
    assert target.kind == "mock" and target.providers == {"tensorlake", "opensandbox"}
    for provider in ("tensorlake", "opensandbox"):
        assert target.capabilities(provider) == {"api", "admin", "engine"}
        assert target.skip_reason(provider, ("api", "admin", "engine")) is None
    assert parse_target("  mock ").spec == "mock"


@pytest.mark.parametrize("provider", ["tensorlake", "opensandbox"])
def test_url_targets_cover_one_provider_with_the_key_from_the_sdk_env_var(provider: str) -> None:
    env = {"TENSORLAKE_API_KEY": "tl-key", "OPEN_SANDBOX_API_KEY": "osb-key"}
    target = parse_target(f"{provider}:http://127.0.0.1:9999/", env)
    other = "opensandbox" if provider == "tensorlake" else "tensorlake"
    assert target.kind == "url" and target.providers == {provider}
    assert target.urls == {provider: "http://127.0.0.1:9999"}  # trailing slash trimmed
    assert target.api_key(provider) == ("tl-key" if provider == "tensorlake" else "osb-key")
    assert target.skip_reason(provider) is None
    assert (
        target.skip_reason(other)
        == f"target '{provider}:http://127.0.0.1:9999/' does not cover {other} (it covers {provider})"
    )
    assert "offers no" in (target.skip_reason(provider, ("engine",)) or "")


def test_url_target_without_key_sends_none() -> None:
    assert parse_target("opensandbox:https://osb.example:8443", {}).api_key("opensandbox") is None


def test_cloud_without_key_is_skipped_with_the_reason_and_never_has_a_url() -> None:
    target = parse_target("tensorlake-cloud", {})
    assert target.kind == "cloud" and target.providers == frozenset() and target.urls == {}
    reason = target.skip_reason("tensorlake")
    assert reason is not None and "TENSORLAKE_API_KEY is not set" in reason
    with pytest.raises(TargetError, match="TENSORLAKE_API_KEY"):
        target.url("tensorlake")


def test_cloud_with_key_talks_to_the_cloud_url_without_the_loopback_overrides() -> None:
    target = parse_target("tensorlake-cloud", {"TENSORLAKE_API_KEY": "tl_real"})
    assert target.url("tensorlake") == TENSORLAKE_CLOUD_URL
    env = target.sdk_env("tensorlake")
    assert env == {"TENSORLAKE_API_URL": TENSORLAKE_CLOUD_URL, "TENSORLAKE_API_KEY": "tl_real"}
    assert target.skip_reason("tensorlake", ("admin",)) is not None


def test_policy_target_loads_the_engine_and_offers_only_the_engine() -> None:
    target = parse_target("policy:contracts.opensandbox_adapter:reference_engine")
    from contracts.opensandbox_adapter import reference_engine

    assert target.kind == "policy" and target.providers == {"opensandbox"}
    assert target.engine("opensandbox") is reference_engine
    assert "not an API server" in (target.skip_reason("opensandbox", ("api",)) or "")
    assert "does not cover tensorlake" in (target.skip_reason("tensorlake", ("engine",)) or "")
    with pytest.raises(TargetError):
        target.url("opensandbox")


def test_policy_target_instantiates_a_class() -> None:
    target = parse_target("policy:contracts.tensorlake_adapter:TensorLakeReferenceEngine")
    assert target.providers == {"tensorlake"}
    assert type(target.engine("tensorlake")).__name__ == "TensorLakeReferenceEngine"


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("", "empty target"),
        ("   ", "empty target"),
        ("bogus", "unknown target 'bogus'"),
        ("Mock", "unknown target"),
        ("tensorlake", "needs a URL: tensorlake:http://HOST:PORT (or tensorlake-cloud"),
        ("opensandbox:", "needs a URL"),
        ("tensorlake:127.0.0.1:8911", "is not an http:// or https:// URL"),
        ("opensandbox:ftp://127.0.0.1", "is not an http:// or https:// URL"),
        ("opensandbox:http://", "is not an http:// or https:// URL"),
        ("opensandbox:http://127.0.0.1:99999", "invalid URL"),
        ("opensandbox:http://127.0.0.1:0", "port 0"),
        ("opensandbox:http://127.0.0.1:8080/?x=1", "query or fragment"),
        ("policy", "must be MODULE:ATTR"),
        ("policy:contracts.opensandbox_adapter", "must be MODULE:ATTR"),
        ("policy::reference_engine", "must be MODULE:ATTR"),
        ("policy:no_such_module_anywhere:engine", "cannot import policy engine module 'no_such_module_anywhere'"),
        ("policy:contracts.opensandbox_adapter:nothing", "has no attribute 'nothing'"),
        ("policy:tests.harness.fakes:no_kind", "needs a `kind` attribute"),
        ("policy:tests.harness.fakes:NeedsArguments", "cannot be created without arguments"),
    ],
)
def test_bad_targets_name_the_accepted_forms(spec: str, fragment: str) -> None:
    with pytest.raises(TargetError) as info:
        parse_target(spec)
    assert fragment in str(info.value)
    assert ACCEPTED_FORMS in str(info.value)


def test_a_half_engine_lists_every_protocol_gap() -> None:
    with pytest.raises(TargetError) as info:
        load_engine("tests.harness.fakes:half_engine")
    text = str(info.value)
    assert "missing method delete(policy, targets)" in text
    assert "merge(policy) cannot be called as merge(policy, rules)" in text
    assert "validate" not in text.split("protocol:", 1)[1]


def test_check_engine_rejects_non_callables_and_unknown_kinds() -> None:
    from tests.harness.fakes import not_callable_kind

    with pytest.raises(TargetError, match="validate is not callable"):
        check_engine(not_callable_kind)
    with pytest.raises(TargetError, match="'tensorlake' or 'opensandbox'; it has 'other'"):
        check_engine(type("E", (), {"kind": "other"})())


def test_engine_module_in_the_current_directory_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_cwd_engine.py").write_text(
        "from contracts.opensandbox_adapter import reference_engine as engine\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        assert load_engine("my_cwd_engine:engine").kind == "opensandbox"
    finally:
        sys.modules.pop("my_cwd_engine", None)


def test_engine_module_that_raises_on_import_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_engine_mod.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        TargetError, match="importing policy engine module 'broken_engine_mod' failed: RuntimeError: boom"
    ):
        load_engine("broken_engine_mod:engine")


def test_sdk_env_points_each_sdk_at_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "corp.example")
    monkeypatch.delenv("no_proxy", raising=False)
    tl = sdk_env("tensorlake", "http://127.0.0.1:8911", "k1")
    assert tl["TENSORLAKE_API_URL"] == tl["TENSORLAKE_SANDBOX_API_URL"] == "http://127.0.0.1:8911"
    assert tl["TENSORLAKE_API_KEY"] == "k1"
    assert tl["NO_PROXY"] == tl["no_proxy"] == "corp.example,127.0.0.1,localhost"
    osb = sdk_env("opensandbox", "http://mock.internal:8080", None)
    assert osb["OPEN_SANDBOX_DOMAIN"] == "mock.internal:8080" and "OPEN_SANDBOX_API_KEY" not in osb
    assert osb["OPENSANDBOX_DISABLE_METRICS"] == "1" and osb["NO_PROXY"].endswith(",mock.internal")
    assert sdk_env("opensandbox", "https://osb.example/", "k")["OPEN_SANDBOX_DOMAIN"] == "https://osb.example"
    with pytest.raises(TargetError, match="unknown provider"):
        sdk_env("e2b", "http://x")


def test_mock_stack_serves_creates_lazily_and_stops() -> None:
    stack = MockStack(FAKE_CLASSES)
    assert stack.started() == {}
    core = stack.core("opensandbox")
    assert isinstance(core, FakeOpenSandbox) and stack.started() == {}
    running = stack.get("opensandbox")
    assert running.mock is core and stack.get("opensandbox") is running
    assert running.api_key == "fake-osb-key" and running.env["OPEN_SANDBOX_API_KEY"] == "fake-osb-key"
    assert httpx.get(running.url + "/_mock/clock").status_code == 200
    url = running.url
    stack.close()
    assert stack.started() == {}
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/_mock/clock")
    with pytest.raises(TargetError, match="no mock for provider 'e2b'"):
        stack.core("e2b")


def test_mock_stack_reports_unimportable_mocks() -> None:
    stack = MockStack({"tensorlake": ("nowhere.at_all:Mock", "tests.harness.fakes:Missing")})
    with pytest.raises(TargetError) as info:
        stack.core("tensorlake")
    assert "nowhere.at_all:Mock: ModuleNotFoundError" in str(info.value)
    assert "tests.harness.fakes:Missing: AttributeError" in str(info.value)


def test_mock_target_starts_on_first_use_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mock_stack, "MOCK_CLASSES", FAKE_CLASSES)
    target = parse_target("mock")
    assert not target.started
    url = target.url("tensorlake")  # starts both mocks
    assert target.started and url.startswith("http://127.0.0.1:")
    assert target.admin_available("opensandbox") and target.api_key("opensandbox") == "fake-osb-key"
    assert isinstance(target.mock("opensandbox"), FakeOpenSandbox) and target.mock("e2b") is None
    client = target.admin_client("tensorlake")
    try:
        assert client.now() >= 0
    finally:
        client.close()
    assert target.sdk_env("tensorlake")["TENSORLAKE_API_URL"] == url
    target.stop()
    assert not target.started and target._urls == {}
    with target.running() as again:
        assert again.url("opensandbox").startswith("http://127.0.0.1:")
    assert not target.started


def test_mock_target_on_a_shared_stack_leaves_the_stack_running() -> None:
    stack = MockStack(FAKE_CLASSES)
    try:
        target = parse_target("mock").configure(mocks=stack)
        with target:
            assert target.url("tensorlake") == stack.get("tensorlake").url
        assert "tensorlake" in stack.started()
    finally:
        stack.close()


def test_url_target_probes_the_admin_api() -> None:
    with FakeOpenSandbox().server() as with_admin:
        target = parse_target(f"opensandbox:{with_admin.url}", {})
        reason = target.skip_reason("opensandbox", ("api", "admin"))
        assert reason is not None and "was not started by this run" in reason and "--allow-reset" in reason
        assert target.admin_available("opensandbox") and not target.admin_writable("opensandbox")
        target.configure(allow_reset=True)
        assert target.skip_reason("opensandbox", ("api", "admin")) is None
        assert target.admin_writable("opensandbox")
    plain = MockServer(_plain_app)
    with plain:
        target = parse_target(f"opensandbox:{plain.url}", {})
        reason = target.skip_reason("opensandbox", ("api", "admin"))
        assert reason is not None and "has no /_mock admin API for opensandbox" in reason
        with pytest.raises(TargetError, match="no /_mock admin API"):
            target.admin_client("opensandbox")


async def _plain_app(scope: dict[str, object], receive: object, send: object) -> None:
    """Answer 404 to everything: a server without the admin API."""
    assert callable(send)
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def test_container_applies_only_to_the_mock_target() -> None:
    with pytest.raises(TargetError, match="only applies to the mock target"):
        parse_target("opensandbox:http://127.0.0.1:1", {}).configure(container=True)


def test_failed_start_is_reported_once_and_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mock_stack, "MOCK_CLASSES", {"tensorlake": ("nowhere:X",), "opensandbox": ("nowhere:Y",)})
    target = parse_target("mock")
    for _ in range(2):
        with pytest.raises(TargetError, match="the tensorlake mock cannot be imported"):
            target.url("tensorlake")
    assert not target.started


def test_describe_names_the_capabilities() -> None:
    assert parse_target("mock").describe() == (
        "mock: tensorlake: [api, admin, engine]; opensandbox: [api, admin, engine]"
    )
    assert "skipped (TENSORLAKE_API_KEY is not set" in parse_target("tensorlake-cloud", {}).describe()
    assert os.environ.get("SANDPROOF_NEVER_SET") is None


def test_the_cloud_target_refuses_the_key_sandproof_env_exports() -> None:
    from mockserver.serve import env_lines

    exports = dict(line.removeprefix("export ").split("=", 1) for line in env_lines("127.0.0.1", 8911, 8080, "k-9"))
    target = parse_target("tensorlake-cloud", exports)
    reason = target.skip_reason("tensorlake")
    assert reason is not None and "sandproof env" in reason
    for key in ("sandproof-key", "k-9"):
        env = {"TENSORLAKE_API_KEY": key, "SANDPROOF_MOCK_API_KEY": "k-9"}
        assert parse_target("tensorlake-cloud", env).skip_reason("tensorlake") is not None
    loopback = {"TENSORLAKE_API_KEY": "tl_real", "TENSORLAKE_API_URL": "http://127.0.0.1:8911"}
    assert "not the TensorLake cloud" in str(parse_target("tensorlake-cloud", loopback).skip_reason("tensorlake"))
    real = parse_target("tensorlake-cloud", {"TENSORLAKE_API_KEY": "tl_real"})
    assert real.skip_reason("tensorlake") is None and real.api_key("tensorlake") == "tl_real"


def test_preflight_names_an_unreachable_url_in_one_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = parse_target(f"opensandbox:http://127.0.0.1:{port}", {})
    with pytest.raises(TargetError, match="cannot reach the opensandbox server"):
        target.preflight()


def test_preflight_of_a_container_target_needs_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.targets import containers

    monkeypatch.setattr(containers, "docker_status", lambda: (False, "no Docker engine here"))
    target = parse_target("mock", {}).configure(container=True)
    with pytest.raises(TargetError, match="--container needs a Docker engine: no Docker engine here"):
        target.preflight()
