"""Break-out attempts through the files APIs of both providers on the linux runtime; each test fails if one works.

A sandbox plants symbolic links to a host folder (``ln -s <host path> ...``: an intermediate component and a
final one) and a client then uses every route that takes a path. The host folder (outside every sandbox)
must come out unchanged: same names, modes and contents, nothing planted, nothing read. The check-then-use
race is made deterministic: the path's resolution runs, then a directory on it is swapped for a link to
the host, then the operation goes on. FIFOs and a 1 GiB sparse file must neither stall the server (the
clock of ``/_mock`` and another sandbox's request answer meanwhile) nor grow its memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mockserver.asgi.server import MockServer
from mockserver.linux import LinuxSandbox
from mockserver.linux.confine import Confinement, Resolved
from mockserver.linux.hostfs import HostFileSystem
from mockserver.opensandbox import OpenSandboxMock
from mockserver.tensorlake import TensorLakeMock

from ..mutants import linux_files_mocks
from .conftest import needs_runtime

pytestmark = needs_runtime

TL_KEY = {"authorization": "Bearer tl-key"}
SECRET = b"host secret, never to be read\n"
#: How long any answer may take here: a stalled server would never answer at all (not a timing assertion).
PATIENCE = 5.0
Snapshot = dict[str, tuple[int, bytes | None]]


# -- the host folder ---------------------------------------------------------------------------------


@pytest.fixture
def host() -> Iterator[Path]:
    """A host folder out of every sandbox's view: a 0600 file, a 0700 folder holding a file."""
    base = Path(tempfile.mkdtemp(prefix="sandproof-host-"))
    (base / "secret").write_bytes(SECRET)
    os.chmod(base / "secret", 0o600)
    (base / "private").mkdir(mode=0o700)
    (base / "private" / "keep").write_bytes(b"keep")
    os.chmod(base, 0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def picture(base: Path) -> Snapshot:
    """Return every path below ``base`` with its mode and its content (files)."""
    out: Snapshot = {}
    for path in sorted([base, *base.rglob("*")]):
        info = path.lstat()
        out[str(path.relative_to(base))] = (info.st_mode, path.read_bytes() if path.is_file() else None)
    return out


@contextlib.contextmanager
def untouched(base: Path) -> Iterator[None]:
    """Check the host folder is exactly as it was after the block (modes, contents, nothing planted)."""
    before = picture(base)
    yield
    assert picture(base) == before


# -- the two mocks, served, with one sandbox each ----------------------------------------------------------


class Tenant:
    """One sandbox of a served mock: a client for its files routes and a shell inside it."""

    def __init__(self, client: httpx.Client, sid: str, sandbox: Callable[[], LinuxSandbox], prefix: str) -> None:
        self.client, self.sid, self._sandbox, self.prefix = client, sid, sandbox, prefix

    def sh(self, command: str) -> str:
        """Run ``command`` inside the sandbox; return its stdout (fail on a non-zero exit)."""
        result = self._sandbox().run(command)
        assert result.exit_code == 0, result
        return result.stdout.decode()

    @property
    def root(self) -> Path:
        """Return the host folder that is the sandbox's ``/`` (for the swaps of the race tests)."""
        return self._sandbox().layout.root

    def api(self, method: str, route: str, **kwargs: Any) -> httpx.Response:
        """Send a request to the provider's API (not the sandbox's), as the tenant."""
        headers = {k: v for k, v in self.client.headers.items() if k == "authorization"}
        return httpx.request(method, f"{self.client.base_url}{route}", headers=headers, timeout=PATIENCE, **kwargs)

    def request(self, method: str, route: str, **kwargs: Any) -> httpx.Response:
        """Send a request to the sandbox's files API."""
        return self.client.request(method, self.prefix + route, timeout=PATIENCE, **kwargs)


@pytest.fixture(scope="module")
def tl_server() -> Iterator[tuple[TensorLakeMock, MockServer]]:
    mock = TensorLakeMock(seed=3, runtime="linux")
    try:
        with mock.server() as srv:
            yield mock, srv
    finally:
        mock.close()


@pytest.fixture(scope="module")
def osb_server() -> Iterator[tuple[OpenSandboxMock, MockServer]]:
    mock = OpenSandboxMock(seed=3, runtime="linux")
    try:
        with mock.server() as srv:
            yield mock, srv
    finally:
        mock.close()


def tl_tenant(served: tuple[TensorLakeMock, MockServer]) -> Tenant:
    mock, srv = served
    client = httpx.Client(base_url=srv.url, headers=TL_KEY, timeout=PATIENCE)
    sid = client.post("/sandboxes", json={}).json()["sandbox_id"]
    client.headers["host"] = f"{sid}.local"
    linux = mock.linux
    assert linux is not None
    return Tenant(client, sid, lambda: linux.ensure(sid), "/api/v1")


def osb_tenant(served: tuple[OpenSandboxMock, MockServer]) -> Tenant:
    mock, srv = served
    client = httpx.Client(base_url=srv.url, timeout=PATIENCE)
    body = {"image": {"uri": "python:3.11"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 600}
    body["resourceLimits"] = {"cpu": "1", "memory": "512Mi"}
    sid = client.post("/v1/sandboxes", json=body).json()["id"]
    linux = mock.linux
    assert linux is not None
    return Tenant(client, sid, lambda: linux.ensure(mock.state.sandboxes[sid]), f"/direct/{sid}/44772")


@pytest.fixture(scope="module")
def tl(tl_server: tuple[TensorLakeMock, MockServer]) -> Tenant:
    return tl_tenant(tl_server)


@pytest.fixture(scope="module")
def osb(osb_server: tuple[OpenSandboxMock, MockServer]) -> Tenant:
    return osb_tenant(osb_server)


@pytest.fixture
def links(request: pytest.FixtureRequest, host: Path) -> Iterator[tuple[Tenant, str, str]]:
    """Plant ``/tmp/<n>/dir -> <host>/private`` and ``/tmp/<n>/file -> <host>/secret`` in the tenant's sandbox."""
    tenant: Tenant = request.getfixturevalue(request.param)
    base = f"/tmp/t{os.urandom(4).hex()}"
    tenant.sh(f"mkdir -p {base} && ln -s {host}/private {base}/dir && ln -s {host}/secret {base}/file")
    yield tenant, f"{base}/dir", f"{base}/file"


def upload(tenant: Tenant, path: str, data: bytes, mode: int | None = None) -> httpx.Response:
    meta: dict[str, Any] = {"path": path} if mode is None else {"path": path, "mode": mode}
    parts = [("metadata", ("metadata", json.dumps(meta), "application/json")), ("file", ("f", data))]
    return tenant.request("POST", "/files/upload", files=parts)


# -- symbolic links through every route ------------------------------------------------------------------

TL_ATTEMPTS: dict[str, Callable[[Tenant, str, str], httpx.Response]] = {
    "PUT through a dir link": lambda t, d, f: t.request("PUT", "/files", params={"path": f"{d}/planted"}, content=b"x"),
    "PUT below a file link": lambda t, d, f: t.request(
        "PUT", "/files", params={"path": f"{f}/result.txt"}, content=b"x"
    ),
    "PUT onto a file link": lambda t, d, f: t.request("PUT", "/files", params={"path": f}, content=b"overwritten"),
    "GET a file link": lambda t, d, f: t.request("GET", "/files", params={"path": f}),
    "GET through a dir link": lambda t, d, f: t.request("GET", "/files", params={"path": f"{d}/keep"}),
    "list a dir link": lambda t, d, f: t.request("GET", "/files/list", params={"path": d}),
    "DELETE through a dir link": lambda t, d, f: t.request("DELETE", "/files", params={"path": f"{d}/keep"}),
    "DELETE a file link": lambda t, d, f: t.request("DELETE", "/files", params={"path": f}),
}

OSB_ATTEMPTS: dict[str, Callable[[Tenant, str, str], httpx.Response]] = {
    "upload through a dir link": lambda t, d, f: upload(t, f"{d}/planted.txt", b"x"),
    "upload onto a file link": lambda t, d, f: upload(t, f, b"overwritten", 777),
    "download a file link": lambda t, d, f: t.request("GET", "/files/download", params={"path": f}),
    "download through a dir link": lambda t, d, f: t.request("GET", "/files/download", params={"path": f"{d}/keep"}),
    "info of a file link": lambda t, d, f: t.request("GET", "/files/info", params={"path": f}),
    "info through a dir link": lambda t, d, f: t.request("GET", "/files/info", params={"path": f"{d}/keep"}),
    "search a dir link": lambda t, d, f: t.request("GET", "/files/search", params={"path": d, "pattern": "*"}),
    "list a dir link": lambda t, d, f: t.request("GET", "/directories/list", params={"path": d}),
    "mkdir mode 777 on a dir link": lambda t, d, f: t.request("POST", "/directories", json={d: {"mode": 777}}),
    "mkdir mode 0 on a file link": lambda t, d, f: t.request("POST", "/directories", json={f: {"mode": 0}}),
    "mkdir below a dir link": lambda t, d, f: t.request("POST", "/directories", json={f"{d}/sub": {"mode": 777}}),
    "chmod a file link": lambda t, d, f: t.request("POST", "/files/permissions", json={f: {"mode": 777}}),
    "chmod through a dir link": lambda t, d, f: t.request(
        "POST", "/files/permissions", json={f"{d}/keep": {"mode": 0}}
    ),
    "chown a file link": lambda t, d, f: t.request("POST", "/files/permissions", json={f: {"owner": "nobody"}}),
    "replace in a file link": lambda t, d, f: t.request(
        "POST", "/files/replace", json={f: {"old": "host", "new": "evil"}}
    ),
    "move a file link": lambda t, d, f: t.request("POST", "/files/mv", json=[{"src": f, "dest": f + ".moved"}]),
    "move into a dir link": lambda t, d, f: t.request("POST", "/files/mv", json=[{"src": f, "dest": f"{d}/moved"}]),
    "move out of a dir link": lambda t, d, f: t.request(
        "POST", "/files/mv", json=[{"src": f"{d}/keep", "dest": "/tmp/k"}]
    ),
    "delete through a dir link": lambda t, d, f: t.request("DELETE", "/files", params={"path": f"{d}/keep"}),
    "rmdir through a dir link": lambda t, d, f: t.request("DELETE", "/directories", params={"path": f"{d}/keep"}),
}


#: The attempts that read: resolved inside the sandbox, where the link's target does not exist, they find nothing.
READS = ("GET", "list", "download", "info", "search")


@pytest.mark.parametrize("links", ["tl"], indirect=True)
@pytest.mark.parametrize("attempt", sorted(TL_ATTEMPTS))
def test_tensorlake_files_api_never_follows_a_link_onto_the_host(
    links: tuple[Tenant, str, str], host: Path, attempt: str
) -> None:
    tenant, dir_link, file_link = links
    with untouched(host):
        answer = TL_ATTEMPTS[attempt](tenant, dir_link, file_link)
    assert SECRET not in answer.content
    if attempt.startswith(READS):
        assert answer.status_code == 404, answer.text


@pytest.mark.parametrize("links", ["osb"], indirect=True)
@pytest.mark.parametrize("attempt", sorted(OSB_ATTEMPTS))
def test_opensandbox_files_api_never_follows_a_link_onto_the_host(
    links: tuple[Tenant, str, str], host: Path, attempt: str
) -> None:
    tenant, dir_link, file_link = links
    with untouched(host):
        answer = OSB_ATTEMPTS[attempt](tenant, dir_link, file_link)
    assert SECRET not in answer.content
    if attempt.startswith(READS):
        assert answer.status_code == 404, answer.text


@pytest.mark.parametrize("links", ["tl", "osb"], indirect=True)
def test_a_link_inside_the_sandbox_still_works_resolved_against_its_root(links: tuple[Tenant, str, str]) -> None:
    tenant, _, _ = links
    tenant.sh("mkdir -p /workspace/real && echo inside > /workspace/real/f && ln -sfn /workspace/real /tmp/in")
    if tenant.prefix == "/api/v1":
        assert tenant.request("GET", "/files", params={"path": "/tmp/in/f"}).content == b"inside\n"
        assert tenant.request("PUT", "/files", params={"path": "/tmp/in/g"}, content=b"g").status_code == 204
    else:
        assert tenant.request("GET", "/files/download", params={"path": "/tmp/in/f"}).content == b"inside\n"
        assert upload(tenant, "/tmp/in/g", b"g").status_code == 200
    assert tenant.sh("cat /workspace/real/g") == "g"


# -- the check-then-use race ---------------------------------------------------------------------------------


@pytest.fixture
def swap(monkeypatch: pytest.MonkeyPatch) -> Callable[[Tenant, str, Path], None]:
    """Arm a swap: right after ``<dir>`` is resolved for a request, it becomes a link to a host folder."""

    def arm(tenant: Tenant, directory: str, target: Path) -> None:
        real = Confinement.resolve
        done = threading.Event()
        host_dir = tenant.root / directory.lstrip("/")

        def resolve(self: Confinement, path: str, **kwargs: Any) -> Resolved:
            resolved = real(self, path, **kwargs)
            if not done.is_set() and path.startswith(directory + "/"):
                done.set()
                host_dir.rename(host_dir.with_name(host_dir.name + ".old"))
                host_dir.symlink_to(target)  # what a sandbox racing the server would do
            return resolved

        monkeypatch.setattr(Confinement, "resolve", resolve)

    return arm


@pytest.mark.parametrize(
    ("provider", "method", "route", "make"),
    [
        ("tl", "PUT", "/files", lambda d: {"params": {"path": f"{d}/planted"}, "content": b"x"}),
        ("tl", "GET", "/files", lambda d: {"params": {"path": f"{d}/secret"}}),
        ("osb", "GET", "/files/info", lambda d: {"params": {"path": f"{d}/secret"}}),
        ("osb", "GET", "/files/download", lambda d: {"params": {"path": f"{d}/secret"}}),
        ("osb", "POST", "/files/permissions", lambda d: {"json": {f"{d}/secret": {"mode": 777}}}),
        ("osb", "POST", "/directories", lambda d: {"json": {f"{d}/made": {"mode": 777}}}),
        ("osb", "POST", "/files/replace", lambda d: {"json": {f"{d}/secret": {"old": "host", "new": "evil"}}}),
    ],
    ids=["tl-put", "tl-get", "osb-info", "osb-download", "osb-chmod", "osb-mkdir", "osb-replace"],
)
def test_a_directory_swapped_for_a_link_between_check_and_use_leads_nowhere_on_the_host(
    request: pytest.FixtureRequest,
    swap: Callable[[Tenant, str, Path], None],
    host: Path,
    provider: str,
    method: str,
    route: str,
    make: Callable[[str], dict[str, Any]],
) -> None:
    tenant: Tenant = request.getfixturevalue(provider)
    directory = f"/tmp/race{os.urandom(4).hex()}/d"
    tenant.sh(f"mkdir -p {directory} && echo mine > {directory}/secret")
    swap(tenant, directory, host)
    with untouched(host):
        answer = tenant.request(method, route, **make(directory))
    assert SECRET not in answer.content
    if method == "GET":  # the host's file is neither read nor described (its size, its mode)
        assert 400 <= answer.status_code < 500, answer.text


# -- FIFOs and a sparse file ----------------------------------------------------------------------------------


def rss() -> int:
    """Return this process's resident memory in bytes (the served mocks run in it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def others_answer(tenant: Tenant, other: Tenant) -> None:
    """Check ``/_mock/clock`` and another sandbox's files request answer (a stalled loop answers neither)."""
    clock = tenant.api("GET", "/_mock/clock")
    assert clock.status_code == 200, clock.text
    listed = other.request(
        "GET", "/files/list" if other.prefix == "/api/v1" else "/directories/list", params={"path": "/tmp"}
    )
    assert listed.status_code == 200, listed.text


def in_background(call: Callable[[], httpx.Response]) -> Callable[[], httpx.Response]:
    """Start ``call`` in a thread; return a function that waits for and returns its answer."""
    box: list[httpx.Response | BaseException] = []

    def run() -> None:
        try:
            box.append(call())
        except BaseException as exc:  # handed to the test
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result() -> httpx.Response:
        thread.join(PATIENCE * 2)
        assert box, "the request never got an answer"
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    return result


def test_a_fifo_through_tensorlake_is_refused_without_stalling_anyone(
    tl: Tenant, tl_server: tuple[TensorLakeMock, MockServer]
) -> None:
    other = tl_tenant(tl_server)
    tl.sh("rm -f /workspace/out.txt && mkfifo /workspace/out.txt")
    read = in_background(lambda: tl.request("GET", "/files", params={"path": "/workspace/out.txt"}))
    others_answer(tl, other)
    answer = read()
    assert (answer.status_code, answer.json()["code"]) == (400, "not_regular"), answer.text
    write = tl.request("PUT", "/files", params={"path": "/workspace/out.txt"}, content=b"x")
    assert (write.status_code, write.json()["code"]) == (400, "not_regular"), write.text
    snapshot = in_background(lambda: tl.api("POST", f"/sandboxes/{tl.sid}/snapshot", json={}))
    others_answer(tl, other)
    assert snapshot().status_code == 200, "a FIFO in the sandbox must not hold up its snapshot"
    tl.sh("test -p /workspace/out.txt")  # still there, never opened for I/O


def test_a_fifo_through_opensandbox_is_refused_without_stalling_anyone(
    osb: Tenant, osb_server: tuple[OpenSandboxMock, MockServer]
) -> None:
    other = osb_tenant(osb_server)
    osb.sh("rm -f /tmp/pipe && mkfifo /tmp/pipe")
    read = in_background(lambda: osb.request("GET", "/files/download", params={"path": "/tmp/pipe"}))
    others_answer(osb, other)
    answer = read()
    assert (answer.status_code, answer.json()["code"]) == (400, "INVALID_FILE"), answer.text
    for attempt in (
        lambda: upload(osb, "/tmp/pipe", b"x"),
        lambda: osb.request("POST", "/files/replace", json={"/tmp/pipe": {"old": "a", "new": "b"}}),
    ):
        refused = attempt()
        assert (refused.status_code, refused.json()["code"]) == (400, "INVALID_FILE"), refused.text
    info = osb.request("GET", "/files/info", params={"path": "/tmp/pipe"})
    assert info.status_code == 200  # its metadata is fine to give: no I/O on it


@pytest.mark.parametrize("provider", ["tl", "osb"])
def test_a_sparse_gigabyte_is_streamed_with_bounded_memory(
    request: pytest.FixtureRequest, provider: str, tl_server: tuple[TensorLakeMock, MockServer]
) -> None:
    tenant: Tenant = request.getfixturevalue(provider)
    other = tl_tenant(tl_server)
    tenant.sh("truncate -s 1G /workspace/big.bin && printf END >> /workspace/big.bin")
    route = "/files" if provider == "tl" else "/files/download"
    before, taken = rss(), 0
    with tenant.client.stream("GET", tenant.prefix + route, params={"path": "/workspace/big.bin"}) as answer:
        assert answer.status_code == 200 and int(answer.headers["content-length"]) == (1 << 30) + 3
        for piece in answer.iter_raw():
            taken += len(piece)
            if taken >= 32 << 20:
                break
        others_answer(tenant, other)  # the stream is paused mid-way: the server serves the others
        grown = rss() - before
    assert grown < 256 << 20, f"the server's memory grew by {grown >> 20} MiB for 32 MiB sent"
    if provider == "osb":
        tail = tenant.request(
            "GET", "/files/download", params={"path": "/workspace/big.bin"}, headers={"range": "bytes=-5"}
        )
        assert (tail.status_code, tail.content) == (206, b"\0\0END")
    tenant.sh("rm /workspace/big.bin")


# -- the suite against wrong files APIs (tests/mutants/linux_files_mocks.py) ------------------------------------


@pytest.mark.parametrize("links", ["osb"], indirect=True)
def test_the_suite_catches_a_chmod_by_host_path(
    links: tuple[Tenant, str, str], host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(HostFileSystem, "chmod", linux_files_mocks.chmod_by_host_path)
    tenant, dir_link, file_link = links
    with pytest.raises(AssertionError), untouched(host):
        OSB_ATTEMPTS["chmod a file link"](tenant, dir_link, file_link)


def test_the_suite_catches_a_stat_by_host_path(
    osb: Tenant, swap: Callable[[Tenant, str, Path], None], host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(HostFileSystem, "stat", linux_files_mocks.stat_by_host_path)
    directory = f"/tmp/race{os.urandom(4).hex()}/d"
    osb.sh(f"mkdir -p {directory} && echo mine > {directory}/secret")
    swap(osb, directory, host)
    answer = osb.request("GET", "/files/info", params={"path": f"{directory}/secret"})
    assert answer.status_code == 200 and answer.json()[f"{directory}/secret"]["size"] == len(SECRET)  # leaked
