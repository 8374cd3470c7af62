"""Drive the mock with the real ``tensorlake`` SDK and check every result again through plain HTTP.

Every flow runs on both runtimes (the emulator and real processes in Linux namespaces), except where it
measures the emulator's virtual time.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from tensorlake.sandbox import (
    CLEAR_NETWORK_POLICY,
    NetworkConfig,
    RemoteAPIError,
    Sandbox,
    SandboxError,
    SandboxNotFoundError,
    SandboxStatus,
)

from mockserver.tensorlake import TensorLakeMock

from .conftest import RUNTIMES, journal

ID_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789")


@pytest.fixture(params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    """Run each flow on the emulator and on the linux runtime."""
    return str(request.param)


def emulated_time_only(runtime: str) -> None:
    """Skip a check of the emulator's virtual time under the linux runtime (its sleeps take real time)."""
    if runtime != "emulator":
        pytest.skip("checks the emulator's virtual clock: real processes sleep in real time")


def get(http: httpx.Client, ident: str) -> dict[str, Any]:
    """Return the SandboxInfo the mock serves for ``ident`` (asserting 200)."""
    response = http.get(f"/sandboxes/{ident}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_default_create_is_running_with_a_real_shaped_id(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client
) -> None:
    sandbox = Sandbox.create(**tl)
    assert len(sandbox.sandbox_id) == 21 and set(sandbox.sandbox_id) <= ID_CHARS
    info = get(http, sandbox.sandbox_id)
    assert info["status"] == "running"
    assert info["resources"] == {"cpus": 1.0, "memory_mb": 1024, "disk_mb": 10240}
    assert info["network_policy"] is None
    assert info["sandbox_url"] == str(http.base_url).rstrip("/")
    assert info["name"] is None and info["file_systems"] == []
    entry = journal(mock, 1, method="POST", path="/sandboxes")[0]
    assert entry.body == '{"resources":{"cpus":1.0,"memory_mb":1024}}'


def test_named_create_with_policy_then_connect_by_name(tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(
        **tl,
        name="web-env",
        allow_out=["api.example.com", "10.0.0.0/8"],
        deny_out=["evil.example.com"],
        exposed_ports=[8080, 3000, 8080],
        timeout_secs=600,
    )
    info = get(http, "web-env")
    assert info["id"] == sandbox.sandbox_id
    assert info["network_policy"] == {
        "allow_internet_access": True,
        "allow_out": ["api.example.com", "10.0.0.0/8"],
        "deny_out": ["evil.example.com"],
    }
    assert info["exposed_ports"] == [3000, 8080] and info["timeout_secs"] == 600
    connected = Sandbox.connect("web-env", **tl)
    assert connected.sandbox_id == sandbox.sandbox_id
    assert connected.info().network_policy == NetworkConfig(
        allow_out=["api.example.com", "10.0.0.0/8"], deny_out=["evil.example.com"]
    )
    with pytest.raises(RemoteAPIError) as exc:
        Sandbox.create(**tl, name="web-env")
    assert exc.value.status_code == 409


def test_wait_false_is_pending_until_the_clock_says_so(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client
) -> None:
    mock.set_timings(startup=30)
    pending = Sandbox.create(**tl, wait=False, name="later")
    assert pending.state == SandboxStatus.PENDING
    info = get(http, pending.sandbox_id)
    assert info["status"] == "pending" and info["pending_reason"] == "scheduling"
    assert info["sandbox_url"] is None
    mock.clock.advance(29)
    assert get(http, "later")["status"] == "pending"
    mock.clock.advance(1)
    sandbox = pending.ready(timeout=5, poll_interval=0.05)
    assert sandbox.sandbox_id == pending.sandbox_id
    assert get(http, "later")["status"] == "running"
    assert sandbox.run("echo", ["up"]).stdout == "up"


def test_blocking_create_waits_on_the_virtual_clock(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client
) -> None:
    mock.set_timings(startup=120)
    start = mock.clock.now()
    sandbox = Sandbox.create(**tl)
    assert mock.clock.now() - start == pytest.approx(120)
    assert get(http, sandbox.sandbox_id)["status"] == "running"


def test_list_shows_every_sandbox_of_the_tenant(tl: dict[str, Any], http: httpx.Client) -> None:
    made = {Sandbox.create(**tl).sandbox_id, Sandbox.create(**tl, name="listed").sandbox_id}
    listed = {info.sandbox_id for info in Sandbox.list(**tl)}
    assert listed == made
    assert {s["id"] for s in http.get("/sandboxes").json()["sandboxes"]} == made
    other = http.get("/sandboxes", headers={"authorization": "Bearer tl_apiKey_someone_else"})
    assert other.json() == {"sandboxes": []}


def test_update_network_replaces_then_clears(tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl, allow_internet_access=False)
    assert get(http, sandbox.sandbox_id)["network_policy"] == {
        "allow_internet_access": False,
        "allow_out": [],
        "deny_out": [],
    }
    updated = sandbox.update(network=NetworkConfig(allow_out=["1.1.1.1"], deny_out=["evil.com"]))
    expected = {"allow_internet_access": True, "allow_out": ["1.1.1.1"], "deny_out": ["evil.com"]}
    assert updated.network_policy is not None
    assert updated.network_policy.model_dump() == expected
    assert get(http, sandbox.sandbox_id)["network_policy"] == expected
    sandbox.update(name="still-open")
    assert get(http, sandbox.sandbox_id)["network_policy"] == expected
    cleared = sandbox.update(network=CLEAR_NETWORK_POLICY)
    assert cleared.network_policy is None
    assert get(http, sandbox.sandbox_id)["network_policy"] is None


def test_update_name_and_auto_resume(tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl, name="before")
    sandbox.update(name="renamed", auto_resume=False)
    info = get(http, "renamed")
    assert info["id"] == sandbox.sandbox_id and info["auto_resume"] is False and info["name"] == "renamed"
    assert http.get("/sandboxes/before").status_code == 404
    fresh = Sandbox.create(**tl, name="before")
    assert fresh.sandbox_id != sandbox.sandbox_id


def test_expose_and_unexpose_ports(client: Any, tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl)
    exposed = client.expose_ports(sandbox.sandbox_id, [8080, 3000])
    assert exposed.exposed_ports == [3000, 8080]
    assert get(http, sandbox.sandbox_id)["exposed_ports"] == [3000, 8080]
    client.expose_ports(sandbox.sandbox_id, [9000], allow_unauthenticated_access=True)
    info = get(http, sandbox.sandbox_id)
    assert info["exposed_ports"] == [3000, 8080, 9000] and info["allow_unauthenticated_access"] is True
    remaining = client.unexpose_ports(sandbox.sandbox_id, [8080, 9000])
    assert remaining.exposed_ports == [3000]
    assert get(http, sandbox.sandbox_id)["exposed_ports"] == [3000]


def test_suspend_and_resume(mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl, name="sleepy")
    sandbox.write_file("/tmp/state", b"kept")
    sandbox.suspend()
    info = get(http, "sleepy")
    assert info["status"] == "suspended" and info["sandbox_url"] is not None
    sandbox.resume()
    assert get(http, "sleepy")["status"] == "running"
    assert sandbox.read_file("/tmp/state").value == b"kept"
    ephemeral = Sandbox.create(**tl)
    with pytest.raises(SandboxError):
        ephemeral.suspend()
    assert get(http, ephemeral.sandbox_id)["status"] == "running"
    suspends = journal(mock, 2, method="POST", path="*/suspend")
    assert [e.status for e in suspends] == [200, 400] and "wait_ms=" in suspends[0].query


def test_slow_suspend_answers_202_and_the_sdk_polls(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client
) -> None:
    mock.set_timings(suspend=100)
    sandbox = Sandbox.create(**tl, name="slow")
    sandbox.suspend(wait=False)
    assert get(http, "slow")["status"] == "suspending"
    mock.clock.advance(100)
    assert get(http, "slow")["status"] == "suspended"


def test_checkpoint_and_restore(tl: dict[str, Any], http: httpx.Client) -> None:
    source = Sandbox.create(**tl, allow_out=["pypi.org"], exposed_ports=[8000])
    source.write_file("/workspace/data.txt", b"checkpointed")
    snapshot = source.checkpoint()
    assert snapshot is not None
    snap = http.get(f"/snapshots/{snapshot.snapshot_id}").json()
    assert snap["status"] == "completed" and snap["sandbox_id"] == source.sandbox_id
    source.write_file("/workspace/data.txt", b"changed later")
    restored = Sandbox.create(**tl, snapshot_id=snapshot.snapshot_id)
    assert restored.sandbox_id != source.sandbox_id
    assert restored.read_file("/workspace/data.txt").value == b"checkpointed"
    info = get(http, restored.sandbox_id)
    assert info["network_policy"]["allow_out"] == ["pypi.org"] and info["exposed_ports"] == [8000]
    assert [s.snapshot_id for s in source.list_snapshots()] == [snapshot.snapshot_id]


def test_run_a_command_and_files(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    result = sandbox.run("echo", ["hello", "world"], env={"A": "1"}, working_dir="/tmp", timeout=5)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "hello world", "")
    shell = sandbox.run("sh", ["-c", "echo out; echo err >&2; exit 3"])
    assert (shell.exit_code, shell.stdout, shell.stderr) == (3, "out", "err")
    sandbox.write_file("/tmp/a.txt", b"alpha\nbeta\n")
    assert sandbox.read_file("/tmp/a.txt").value == b"alpha\nbeta\n"
    assert sandbox.run("cat", ["/tmp/a.txt"]).stdout == "alpha\nbeta"
    names = {e.name: e for e in sandbox.list_directory("/tmp").entries}
    assert names["a.txt"].size == 11 and not names["a.txt"].is_dir
    sandbox.delete_file("/tmp/a.txt")
    assert "a.txt" not in {e.name for e in sandbox.list_directory("/tmp").entries}
    with pytest.raises(SandboxError):
        sandbox.read_file("/tmp/a.txt")
    logs = sandbox.get_logs().logs
    bodies = [entry.body for entry in logs]
    # stdout and stderr are two pipes: on the linux runtime "err" may be read before "out"
    assert bodies[0] == "hello world" and sorted(bodies[1:3]) == ["err", "out"]


def test_run_timeout_is_enforced_on_the_virtual_clock(mock: TensorLakeMock, tl: dict[str, Any], runtime: str) -> None:
    emulated_time_only(runtime)
    sandbox = Sandbox.create(**tl)
    start = mock.clock.now()
    result = sandbox.run("sh", ["-c", "echo started; sleep 600; echo never"], timeout=30)
    assert result.timed_out and result.exit_code == -9 and result.stdout == "started"
    assert mock.clock.now() - start == pytest.approx(30)


def test_terminate(mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl, name="doomed")
    sandbox.terminate()
    assert http.get(f"/sandboxes/{sandbox.sandbox_id}").status_code == 404
    archived = http.get(f"/archived-sandboxes/{sandbox.sandbox_id}").json()
    assert archived["status"] == "terminated" and archived["archived_at"] is not None
    with pytest.raises(SandboxNotFoundError):
        Sandbox.connect(sandbox.sandbox_id, **tl)
    Sandbox.create(**tl, name="doomed")


def test_resize_reports_resource_resize(tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl)
    info = sandbox.update(cpus=2, memory_mb=2048)
    assert (info.resources.cpus, info.resources.memory_mb) == (2, 2048)
    served = get(http, sandbox.sandbox_id)
    assert served["resource_resize"]["status"] == "succeeded" and served["resource_resize"]["generation"] == 1
    assert served["resources"]["memory_mb"] == 2048


def test_timeout_secs_terminates_ephemeral_and_suspends_named(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client
) -> None:
    ephemeral = Sandbox.create(**tl, timeout_secs=60)
    named = Sandbox.create(**tl, timeout_secs=60, name="napper")
    mock.clock.advance(59)
    assert get(http, ephemeral.sandbox_id)["status"] == "running"
    mock.clock.advance(1)
    assert http.get(f"/sandboxes/{ephemeral.sandbox_id}").status_code == 404
    archived = http.get(f"/archived-sandboxes/{ephemeral.sandbox_id}").json()
    assert archived["termination_reason"] == "timeout"
    assert get(http, named.sandbox_id)["status"] == "suspended"


def test_both_route_trees_and_collapsed_slashes(tl: dict[str, Any], http: httpx.Client) -> None:
    sandbox = Sandbox.create(**tl, name="both")
    flat = get(http, sandbox.sandbox_id)
    scoped = http.get(f"/v1/namespaces/default/sandboxes/{sandbox.sandbox_id}").json()
    base = str(http.base_url).rstrip("/")
    doubled = http.get(httpx.URL(base + "//v1/namespaces/default/sandboxes/both")).json()
    assert flat == scoped == doubled
    assert http.get("/v1/namespaces/other/sandboxes/both").status_code == 404


def test_localhost_api_url_uses_the_namespaced_tree(
    mock: TensorLakeMock, server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TENSORLAKE_SANDBOX_API_URL")
    sandbox = Sandbox.create(api_url=server_url + "/", api_key="tl_apiKey_tests", name="scoped")
    assert sandbox.run("echo", ["ok"]).stdout == "ok"
    assert journal(mock, 1, method="POST", path="//v1/namespaces/default/sandboxes")


def test_background_processes(mock: TensorLakeMock, tl: dict[str, Any], runtime: str) -> None:
    emulated_time_only(runtime)
    sandbox = Sandbox.create(**tl)
    mock.clock.set_mode("manual")
    sleeper = sandbox.start_process("sh", ["-c", "echo waking; sleep 100; echo awake"], name="sleeper").value
    assert sleeper.status.value == "running" and sleeper.command == "sh"
    assert [p.pid for p in sandbox.list_processes()] == [sleeper.pid]
    assert sandbox.get_stdout(sleeper.pid).lines == ["waking"]
    mock.clock.advance(100)
    followed = [event.line for event in sandbox.follow_stdout(sleeper.pid)]
    assert followed == ["waking", "awake"]
    done = sandbox.get_process(sleeper.pid).value
    assert done.status.value == "exited" and done.exit_code == 0
    victim = sandbox.start_process("sleep", ["1000"]).value
    sandbox.kill_process(victim.pid)
    killed = sandbox.get_process(victim.pid).value
    assert killed.status.value == "signaled" and killed.signal == 9
    assert sandbox.health().healthy is True
    assert sandbox.daemon_info().total_processes == 2


def _until(probe: Any) -> Any:
    """Return ``probe()`` once it is truthy (polling: real processes take real time)."""
    for _ in range(500):
        if found := probe():
            return found
        time.sleep(0.01)
    raise AssertionError("the condition never became true")


def _ended(sandbox: Sandbox, pid: int) -> Any:
    """Return the process's record once it has ended."""
    return _until(lambda: (info := sandbox.get_process(pid).value).status.value != "running" and info)


def test_a_piped_stdin_is_fed_and_closing_it_ends_the_reader(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    cat = sandbox.start_process("cat", stdin_mode="pipe").value
    sandbox.write_stdin(cat.pid, b"first line\n")
    _until(lambda: sandbox.get_stdout(cat.pid).lines == ["first line"])  # fed as it comes, not at the close
    sandbox.write_stdin(cat.pid, b"second line\n")
    assert sandbox.get_process(cat.pid).value.stdin_writable
    sandbox.close_stdin(cat.pid)
    assert (_ended(sandbox, cat.pid).exit_code, sandbox.get_stdout(cat.pid).lines) == (0, ["first line", "second line"])
    counter = sandbox.start_process("sh", ["-c", "wc -l"], stdin_mode="pipe").value
    sandbox.write_stdin(counter.pid, b"a\nb\nc\n")
    sandbox.close_stdin(counter.pid)
    assert (_ended(sandbox, counter.pid).exit_code, sandbox.get_stdout(counter.pid).lines) == (0, ["3"])
    done = sandbox.start_process("echo", ["no reader"], stdin_mode="pipe").value
    assert _ended(sandbox, done.pid).exit_code == 0
    with pytest.raises(SandboxError, match="stdin"):
        sandbox.write_stdin(done.pid, b"too late\n")


def test_get_or_create_creates_attaches_and_resumes(tl: dict[str, Any], http: httpx.Client) -> None:
    first = Sandbox.get_or_create("shared-env", **tl)
    again = Sandbox.get_or_create("shared-env", **tl)
    assert (first.bind_outcome, again.bind_outcome) == ("created", "attached")
    assert first.sandbox_id == again.sandbox_id
    again.suspend()
    woken = Sandbox.get_or_create("shared-env", **tl)
    assert woken.bind_outcome == "resumed" and get(http, "shared-env")["status"] == "running"


def test_a_create_past_the_sandbox_cap_raises_the_failure_with_no_capacity(
    mock: TensorLakeMock, tl: dict[str, Any], http: httpx.Client, runtime: str
) -> None:
    if runtime != "emulator":
        pytest.skip("the cap is the model's rule, the same on both runtimes (tests/sandproof/test_serve_capacity.py)")
    mock.capacity.limit = 1
    try:
        Sandbox.create(**tl)
        with pytest.raises(SandboxError) as refused:
            Sandbox.create(**tl)
    finally:
        mock.capacity.limit = None
    assert getattr(refused.value, "reason", None) == "no_capacity"
    assert len(http.get("/sandboxes").json()["sandboxes"]) == 1
