"""What the server benchmarks share: start ``sandproof serve`` or a bare Starlette echo in its own process,
poll ports until they answer, read a process's CPU time, and print a script's figures for ``run_all.py``.

Run as a script, ``python bench/support.py echo PORT [PORT ...]`` serves the bare Starlette echo (the
baseline) on each port from one process, on the same uvicorn configuration the mocks use.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: The prefix of the one line each benchmark prints for ``run_all.py`` to collect.
FIGURES = "@figures "
API_KEY = "bench-key"


def emit(name: str, figures: dict[str, Any]) -> None:
    """Print a benchmark's headline figures as one machine-readable line."""
    print(FIGURES + json.dumps({"bench": name, **figures}, sort_keys=True), flush=True)


def free_port() -> int:
    """Return a loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers(port: int, timeout: float = 0.2) -> bool:
    """Tell whether something on ``127.0.0.1:port`` answers an HTTP request with a status line."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"GET /_mock/clock HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return sock.recv(12).startswith(b"HTTP/1.1 ")
    except OSError:
        return False


def wait_answering(ports: Iterable[int], proc: subprocess.Popen[Any], deadline: float) -> None:
    """Poll ``ports`` every few milliseconds until each answers; raise if ``proc`` dies or time runs out."""
    waiting = list(ports)
    while waiting:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering")
        if time.monotonic() > deadline:
            raise RuntimeError(f"ports {waiting} did not answer in time")
        waiting = [port for port in waiting if not answers(port)]
        if waiting:
            time.sleep(0.003)


def cpu_seconds(pid: int) -> float:
    """Return the user plus system CPU seconds process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> float:
    """Return the CPU seconds the live threads of ``pid`` have run, to the nanosecond (``/proc/PID/task/*/schedstat``).

    Finer than ``cpu_seconds`` (clock ticks of 10 ms, a tenth of a start-up) but blind to threads that have
    exited, so it suits a process's first moments; without schedstat it falls back to ``cpu_seconds``.
    """
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        for task in tasks:
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except FileNotFoundError:  # the thread ended meanwhile
                continue
    except OSError:
        return cpu_seconds(pid)
    return total / 1e9 if total else cpu_seconds(pid)


@dataclass
class Served:
    """A server process and its loopback ports."""

    proc: subprocess.Popen[Any]
    ports: dict[str, int] = field(default_factory=dict)
    started: float = 0.0
    answering: float = 0.0
    #: CPU seconds the process had used when every port answered (robust to other load on the machine).
    cpu_at_answer: float = 0.0

    def url(self, name: str) -> str:
        """Return the base URL of one port."""
        return f"http://127.0.0.1:{self.ports[name]}"

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL) and wait for it."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def python() -> list[str]:
    """Return the interpreter command with the repository first on the path."""
    return [sys.executable]


def child_env() -> dict[str, str]:
    """Return the environment of a server child: this repository first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def start_serve(
    extra: Sequence[str] = (), *, timeout: float = 30.0, quiet: bool = True, nofile: int | None = None
) -> Served:
    """Start ``sandproof serve`` on two free ports and return once both answer.

    ``nofile`` sets the server's open-files limit (soft and hard) before it starts.
    """
    ports = {"tensorlake": free_port(), "opensandbox": free_port()}
    command = [
        *python(),
        "-m",
        "sandproof.cli",
        "serve",
        "--tensorlake-port",
        str(ports["tensorlake"]),
        "--opensandbox-port",
        str(ports["opensandbox"]),
        *extra,
    ]
    return _launch(command, ports, timeout=timeout, quiet=quiet, nofile=nofile)


def start_echo(names: Sequence[str] = ("echo",), *, timeout: float = 30.0) -> Served:
    """Start the bare Starlette echo on one free port per name, from one process."""
    ports = {name: free_port() for name in names}
    command = [*python(), str(Path(__file__).resolve()), "echo", *map(str, ports.values())]
    return _launch(command, ports, timeout=timeout, quiet=True)


def _launch(
    command: Sequence[str], ports: dict[str, int], *, timeout: float, quiet: bool, nofile: int | None = None
) -> Served:
    """Start ``command`` serving ``ports`` and return once every port answers (stopping it if none does)."""
    started = time.monotonic()
    out = subprocess.DEVNULL if quiet else None

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(
        command, cwd=ROOT, env=child_env(), stdout=out, stderr=out, preexec_fn=limit if nofile else None
    )
    served = Served(proc, ports, started)
    try:
        wait_answering(ports.values(), proc, started + timeout)
    except BaseException:
        served.stop()
        raise
    served.answering = time.monotonic()
    served.cpu_at_answer = thread_cpu_seconds(proc.pid)
    return served


def serve_echo(ports: Sequence[int]) -> int:
    """Serve the bare echo app on ``ports`` until SIGTERM."""
    import signal
    import threading

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from mockserver.asgi.server import MockServer

    async def echo(request: Request) -> JSONResponse:
        return JSONResponse({"id": request.path_params.get("sid", ""), "status": "running"})

    app = Starlette(routes=[Route("/sandboxes/{sid}", echo), Route("/{path:path}", echo)])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    servers = [MockServer(app, port=port, timeout_keep_alive=30.0).start() for port in ports]
    stop.wait()
    for server in servers:
        server.stop()
    return 0


def percentile(samples: Sequence[float], q: float) -> float:
    """Return the ``q`` quantile (0-1) of ``samples`` by nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "echo":
        raise SystemExit(serve_echo([int(p) for p in sys.argv[2:]]))
    raise SystemExit("usage: support.py echo PORT [PORT ...]")
