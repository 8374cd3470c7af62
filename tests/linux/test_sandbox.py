"""Real programs in a sandbox: the shell, python3, stdin, timeouts, kill, signals, exit codes, PTYs, pause."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from mockserver.linux import LinuxRuntime, LinuxSandbox, SandboxStateError, SpawnError
from mockserver.linux.sandbox import _cannot_run, _task_state

from .conftest import needs_runtime

pytestmark = needs_runtime


def test_python3_prints_42(sandbox: LinuxSandbox) -> None:
    result = sandbox.run('python3 -c "print(6*7)"')
    assert (result.stdout, result.stderr, result.exit_code) == (b"42\n", b"", 0)


def test_a_for_loop_and_arithmetic(sandbox: LinuxSandbox) -> None:
    result = sandbox.run("for i in 1 2 3; do echo line $i; done; echo $((6 * 7)); if [ -d /tmp ]; then echo yes; fi")
    assert result.stdout == b"line 1\nline 2\nline 3\n42\nyes\n"


def test_background_job_and_wait(sandbox: LinuxSandbox) -> None:
    result = sandbox.run("(sleep 0.2; echo late) & echo early; wait; echo after")
    assert result.stdout == b"early\nlate\nafter\n"


def test_stdin_is_fed_and_closed(sandbox: LinuxSandbox) -> None:
    result = sandbox.run("wc -l; cat -", stdin=b"a\nb\nc\n")
    assert result.stdout == b"3\n"
    assert sandbox.run(["cat"], stdin=b"x" * 200_000).stdout == b"x" * 200_000


def test_interactive_stdin(sandbox: LinuxSandbox) -> None:
    proc = sandbox.start_process(
        ["python3", "-u", "-c", "import sys\nfor l in sys.stdin: print(l.upper(), end='')"], stdin=True
    )
    proc.write_stdin(b"one\n")
    first = next(e for e in proc.events() if getattr(e, "data", b""))
    assert first.data == b"ONE\n"  # type: ignore[union-attr]
    proc.write_stdin(b"two\n")
    proc.close_stdin()
    status = proc.wait(10)
    assert status is not None and status.code == 0
    assert proc.output("stdout") == b"ONE\nTWO\n"
    assert not proc.write_stdin(b"late")


@pytest.mark.parametrize(("command", "code"), [("exit 0", 0), ("exit 3", 3), ("false", 1), ("exit 255", 255)])
def test_exit_codes(sandbox: LinuxSandbox, command: str, code: int) -> None:
    status = sandbox.run(command).status
    assert (status.code, status.signal, status.reason) == (code, None, "exited")


def test_stdout_and_stderr_are_separate(sandbox: LinuxSandbox) -> None:
    result = sandbox.run("echo out; echo err >&2; echo out2")
    assert (result.stdout, result.stderr) == (b"out\nout2\n", b"err\n")


def test_timeout_kills_the_whole_group(sandbox: LinuxSandbox) -> None:
    result = sandbox.run("sleep 30 & sleep 30; echo never", timeout=0.3)
    assert result.status.timed_out and result.status.signal == signal.SIGKILL
    assert result.exit_code == 137 and result.status.reason == "timed_out"
    assert b"never" not in result.stdout
    assert sandbox.run("pgrep -x sleep || echo none").stdout == b"none\n"


def test_kill_and_signals(sandbox: LinuxSandbox) -> None:
    proc = sandbox.start_process("trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done")
    assert next(proc.events()).data == b"ready\n"  # type: ignore[union-attr]
    assert proc.signal(signal.SIGTERM, group=False)
    status = proc.wait(10)
    assert status is not None and status.code == 7 and b"got-term" in proc.output()
    assert not proc.signal(signal.SIGTERM)  # it has ended
    sleeper = sandbox.start_process(["sleep", "30"])
    assert sleeper.kill()
    status = sleeper.wait(10)
    assert status is not None and (status.signal, status.shell_code, status.reason) == (9, 137, "signaled")


def test_env_and_cwd(sandbox: LinuxSandbox) -> None:
    result = sandbox.run('echo "$GREETING $HOME $HOSTNAME"; pwd', env={"GREETING": "hi"}, cwd="/workspace")
    assert result.stdout == f"hi /root {sandbox.hostname}\n/workspace\n".encode()


def test_spawn_errors(sandbox: LinuxSandbox) -> None:
    with pytest.raises(SpawnError) as missing_cwd:
        sandbox.start_process("true", cwd="/does/not/exist")
    assert missing_cwd.value.code == "cwd_not_found"
    assert missing_cwd.value.message == "working directory does not exist: /does/not/exist"
    with pytest.raises(SpawnError) as missing_cmd:
        sandbox.start_process(["no-such-command"])
    assert missing_cmd.value.code == "not_found"
    sandbox.write_file("/tmp/noexec", b"#!/bin/sh\necho hi\n", mode=0o644)
    with pytest.raises(SpawnError) as not_exec:
        sandbox.start_process(["/tmp/noexec"])
    assert not_exec.value.code == "permission_denied"
    assert sandbox.run("echo still fine").stdout == b"still fine\n"


def test_many_processes_at_once(sandbox: LinuxSandbox) -> None:
    procs = [sandbox.start_process(f"sleep 0.1; echo {n}") for n in range(20)]
    for n, proc in enumerate(procs):
        status = proc.wait(20)
        assert status is not None and status.code == 0 and proc.output() == f"{n}\n".encode()


def test_background_child_holding_stdout_does_not_block_the_exit(sandbox: LinuxSandbox) -> None:
    result = sandbox.run("sleep 30 & echo started", timeout=20)
    assert result.stdout == b"started\n" and result.exit_code == 0
    assert b"sleep" in sandbox.run("ps -eo comm").stdout  # the background child lives on


def test_pty_echoes_typed_input_and_resizes(sandbox: LinuxSandbox) -> None:
    term = sandbox.pty(["/bin/bash", "--norc", "--noprofile", "-i"], rows=30, cols=101)
    term.write_stdin(b"echo typed-$((6*7)); stty size; tty\n")
    deadline = time.monotonic() + 10
    while b"/dev/pts/" not in term.output() and time.monotonic() < deadline:  # `tty` ran, so `stty size` did
        term.wait(0.05)
    term.resize(40, 120)
    term.write_stdin(b"stty size\n")
    while b"40 120" not in term.output() and time.monotonic() < deadline:
        term.wait(0.05)
    # ^D ends bash only at an empty prompt: wait for the prompt after `stty size` (a loaded machine is slow to draw it).
    while not term.output().split(b"40 120")[-1].rstrip(b" ").endswith((b"#", b"$")) and time.monotonic() < deadline:
        term.wait(0.05)
    term.close_stdin()  # ^D at an empty prompt ends bash
    status = term.wait(10)
    out = term.output("pty")
    assert status is not None and status.code == 0
    assert b"typed-42" in out and b"30 101" in out and b"40 120" in out and b"/dev/pts/" in out
    assert b"echo typed-" in out  # the terminal echoed what was typed


def test_freeze_stops_everything_and_thaw_resumes(sandbox: LinuxSandbox) -> None:
    proc = sandbox.start_process("i=0; while :; do i=$((i+1)); echo $i; sleep 0.01; done")
    while not proc.output():
        proc.wait(0.02)
    sandbox.freeze()
    frozen_at = len(proc.output())
    time.sleep(0.3)
    assert len(proc.output()) == frozen_at
    with pytest.raises(SandboxStateError) as paused:
        sandbox.run("true")
    assert paused.value.state == "frozen"
    sandbox.thaw()
    deadline = time.monotonic() + 10
    while len(proc.output()) == frozen_at and time.monotonic() < deadline:
        proc.wait(0.02)
    assert len(proc.output()) > frozen_at
    assert proc.kill()


def test_freeze_by_signals_when_there_is_no_freezer(sandbox: LinuxSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    if sandbox.cgroup is not None:
        monkeypatch.setattr(sandbox.cgroup, "freeze", lambda *_a, **_k: False)
    proc = sandbox.start_process("while :; do echo x; sleep 0.01; done")
    while not proc.output():
        proc.wait(0.02)
    sandbox.freeze()
    assert sandbox.frozen_by == "signals"
    states = {pid: _task_state(pid) for pid in sandbox.host_pids()}
    assert states and all(_cannot_run(pid) for pid in states), states  # stopped (or held by a stopped vfork child)
    time.sleep(0.05)  # output relayed before the freeze may still be arriving
    before = len(proc.output())
    time.sleep(0.1)
    assert len(proc.output()) == before  # nothing runs: the loop printed nothing more
    sandbox.thaw()
    assert proc.kill()


def test_destroy_kills_the_tree_and_refuses_work(runtime: LinuxRuntime) -> None:
    sb = runtime.create_sandbox()
    proc = sb.start_process("sleep 60 & echo started; sleep 60")
    assert next(proc.events()).data == b"started\n"  # type: ignore[union-attr]
    pids = sb.host_pids()
    assert len(pids) >= 3
    sb.destroy()
    status = proc.wait(10)
    assert status is not None and status.signal == signal.SIGKILL
    for pid in pids:
        with pytest.raises(OSError):
            Path(f"/proc/{pid}/stat").read_text()
    with pytest.raises(SandboxStateError):
        sb.run("true")
    sb.destroy()  # idempotent


def test_usage_counts_the_sandboxs_processes(sandbox: LinuxSandbox) -> None:
    idle = sandbox.usage()
    busy = sandbox.start_process(["python3", "-c", "x = bytearray(30 << 20)\nwhile True: pass"])
    deadline = time.monotonic() + 20
    while sandbox.usage().cpu_seconds < idle.cpu_seconds + 0.2 and time.monotonic() < deadline:
        busy.wait(0.05)
    now = sandbox.usage()
    assert now.processes == idle.processes + 1 and now.cpu_count >= 1
    assert now.cpu_seconds >= idle.cpu_seconds + 0.2
    assert now.memory_bytes > idle.memory_bytes + (20 << 20)
    assert busy.kill()
