"""Tests for the opt-in, non-isolated local subprocess backend."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator

import pytest

from mockserver.sandbox import Exit, LocalBackend, Output, Sleep, Step

pytestmark = pytest.mark.skipif(sys.platform == "win32" or not os.path.exists("/bin/sh"), reason="needs POSIX sh")


@pytest.fixture
def backend() -> Iterator[LocalBackend]:
    local = LocalBackend(env={"SANDPROOF_TEST": "1"})
    yield local
    local.close()


def collect(steps: Iterator[Step]) -> tuple[bytes, bytes, int]:
    out, err, code = b"", b"", None
    for step in steps:
        assert not isinstance(step, Sleep)
        if isinstance(step, Output):
            if step.stream == "stdout":
                out += step.data
            else:
                err += step.data
        else:
            code = step.code
    assert code is not None
    return out, err, code


def test_shell_line_streams_and_exit_code(backend: LocalBackend) -> None:
    steps = list(backend.run("echo out; echo err >&2; exit 3"))
    assert steps[-1] == Exit(3)
    assert collect(iter(steps)) == (b"out\n", b"err\n", 3)


def test_argv_stdin_env_and_cwd(backend: LocalBackend) -> None:
    assert collect(backend.run(["cat"], stdin=b"piped")) == (b"piped", b"", 0)
    out, _, _ = collect(backend.run("echo $SANDPROOF_TEST $EXTRA", env={"EXTRA": "x"}))
    assert out == b"1 x\n"
    out, _, _ = collect(backend.run("pwd", cwd="/work/dir"))
    assert os.path.realpath(out.decode().strip()) == os.path.realpath(backend.host_path("/work/dir"))
    assert backend.host_path("/a/../b") == backend.root / "b"


def test_missing_program_and_signals(backend: LocalBackend) -> None:
    assert collect(backend.run(["definitely-not-a-real-program-xyz"]))[2] == 127
    assert collect(backend.run("kill -9 $$"))[2] == 137
    assert list(backend.run([])) == [Exit(0)]


def test_output_is_streamed_before_exit(backend: LocalBackend) -> None:
    steps = backend.run("echo first; sleep 0.3; echo second")
    started = time.monotonic()
    first = next(steps)
    assert first == Output("stdout", b"first\n")
    assert time.monotonic() - started < 0.3
    assert collect(steps)[0] == b"second\n"


def test_closing_the_iterator_kills_the_command(backend: LocalBackend) -> None:
    marker = backend.host_path("/marker")
    steps = backend.run(f"echo go; sleep 30; touch {marker}")
    started = time.monotonic()
    assert next(steps) == Output("stdout", b"go\n")
    steps.close()  # type: ignore[attr-defined]
    assert time.monotonic() - started < 5
    assert not marker.exists()


def test_background_child_does_not_hang(backend: LocalBackend) -> None:
    started = time.monotonic()
    assert collect(backend.run("sleep 30 & echo done"))[0] == b"done\n"
    assert time.monotonic() - started < 5


def test_close_removes_directory() -> None:
    with LocalBackend() as local:
        root = local.root
        collect(local.run("echo data > file.txt"))
        assert (root / "file.txt").read_text() == "data\n"
    assert not root.exists()
    with pytest.raises(RuntimeError):
        list(local.run("true"))
