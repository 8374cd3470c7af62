"""Tests for the command emulator: shell syntax, builtins, handlers and egress probes."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockserver.sandbox import (
    CommandEmulator,
    Completed,
    Exit,
    FileSystem,
    FsError,
    HttpResponse,
    HttpTable,
    Invocation,
    OpenGate,
    Output,
    Resolution,
    Sleep,
    Step,
)

DNS = {"example.com": ["93.184.216.34"], "api.example.com": ["10.1.2.3", "10.1.2.4"]}


class Clock:
    """Advance one second per reading."""

    def __init__(self) -> None:
        self.value = 1_700_000_000.0

    def __call__(self) -> float:
        self.value += 1.0
        return self.value


class RecordingGate(OpenGate):
    """Open gate that remembers every resolve and connect."""

    def __init__(self, dns: dict[str, list[str]] | None = None, *, allow: bool = True) -> None:
        super().__init__(dns if dns is not None else DNS)
        self.allow = allow
        self.resolved: list[str] = []
        self.connects: list[tuple[str | None, str, int]] = []

    def resolve(self, name: str) -> Resolution:
        self.resolved.append(name)
        return super().resolve(name)

    def connect(self, host: str | None, ip: str, port: int) -> bool:
        self.connects.append((host, ip, port))
        return self.allow


class DnsBlockedGate(RecordingGate):
    """Gate whose policy blocks every DNS query."""

    def resolve(self, name: str) -> Resolution:
        self.resolved.append(name)
        return Resolution((), "dns_blocked")


@pytest.fixture
def fs() -> FileSystem:
    return FileSystem(now=Clock())


@pytest.fixture
def gate() -> RecordingGate:
    return RecordingGate()


@pytest.fixture
def http() -> HttpTable:
    return HttpTable(
        {
            "https://example.com/missing": HttpResponse(404, b"nope\n"),
            "POST https://example.com/submit": HttpResponse(201, b"created\n", {"content-type": "text/plain"}),
            "http://example.com/old": HttpResponse(301, b"", {"Location": "/new"}),
            "http://example.com/new": HttpResponse(200, b"moved here\n"),
            "http://example.com/slow": HttpResponse(200, b"slow\n", delay=5.0),
            "api.example.com": HttpResponse(200, b'{"api": true}\n'),
        }
    )


@pytest.fixture
def emu(fs: FileSystem, gate: RecordingGate, http: HttpTable) -> CommandEmulator:
    return CommandEmulator(fs, gate=gate, http=http)


def run(emu: CommandEmulator, command: str | Sequence[str], **kwargs: object) -> Completed:
    return emu.run_to_completion(command, **kwargs)  # type: ignore[arg-type]


def sh(emu: CommandEmulator, command: str, *, cwd: str = "/home/user", stdin: bytes = b"") -> Completed:
    return emu.run_to_completion(command, cwd=cwd, stdin=stdin)


def stdout(emu: CommandEmulator, command: str, **kwargs: object) -> str:
    result = sh(emu, command, **kwargs)  # type: ignore[arg-type]
    return result.stdout.decode()


# -- step protocol -----------------------------------------------------------------------------------


def test_run_yields_steps_ending_with_exit(emu: CommandEmulator) -> None:
    steps = list(emu.run("echo a; sleep 1.5; echo b >&2; exit 3"))
    assert steps == [Output("stdout", b"a\n"), Sleep(1.5), Output("stderr", b"b\n"), Exit(3)]


def test_run_is_lazy(emu: CommandEmulator, fs: FileSystem) -> None:
    steps = emu.run("touch /tmp/lazy")
    assert not fs.exists("/tmp/lazy")
    assert list(steps) == [Exit(0)]
    assert fs.exists("/tmp/lazy")


def test_stopping_iteration_kills_the_command(emu: CommandEmulator, fs: FileSystem) -> None:
    steps = emu.run("sleep 5; touch /tmp/after")
    assert next(steps) == Sleep(5.0)
    steps.close()  # type: ignore[attr-defined]
    assert not fs.exists("/tmp/after")


def test_run_to_completion_timeout(emu: CommandEmulator, fs: FileSystem) -> None:
    result = emu.run_to_completion("echo start; sleep 10; touch /tmp/late", timeout=4)
    assert (result.exit_code, result.timed_out, result.slept, result.stdout) == (124, True, 4, b"start\n")
    assert not fs.exists("/tmp/late")
    done = emu.run_to_completion("sleep 1; sleep 2", timeout=3)
    assert (done.exit_code, done.slept, done.timed_out) == (0, 3.0, False)


def test_missing_cwd(emu: CommandEmulator) -> None:
    result = run(emu, "pwd", cwd="/does/not/exist")
    assert result.exit_code == 2 and b"can't cd" in result.stderr


def test_deterministic(emu: CommandEmulator) -> None:
    line = "echo $RANDOM; uname -a; id; ls -l /etc; ping -c 2 example.com"
    assert sh(emu, line) == sh(emu, line)


# -- argv form ---------------------------------------------------------------------------------------


def test_argv_is_not_shell_parsed(emu: CommandEmulator) -> None:
    result = run(emu, ["echo", "$HOME", "a;b", "*", "'q'"])
    assert result.stdout == b"$HOME a;b * 'q'\n"


def test_argv_shell_unwrapping(emu: CommandEmulator) -> None:
    assert run(emu, ["bash", "-lc", "echo $HOME && pwd"], cwd="/tmp").stdout == b"/home/user\n/tmp\n"
    assert run(emu, ["/bin/sh", "-c", "echo $0-$1", "name", "arg"]).stdout == b"name-arg\n"
    assert run(emu, []).exit_code == 0
    assert run(emu, ["nope"]).exit_code == 127


def test_env_parameter_merges_over_defaults(emu: CommandEmulator) -> None:
    result = run(emu, "echo $FOO $HOME $USER; env", env={"FOO": "bar"})
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "bar /home/user user"
    assert "FOO=bar" in lines and any(line.startswith("PATH=") for line in lines)


# -- shell syntax ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "out", "code"),
    [
        ("true; echo $?", "0\n", 0),
        ("false; echo $?", "1\n", 0),
        ("true && echo yes", "yes\n", 0),
        ("false && echo yes", "", 1),
        ("false || echo rescue", "rescue\n", 0),
        ("true || echo never", "", 0),
        ("false && echo a || echo b", "b\n", 0),
        ("true && false || echo c && echo d", "c\nd\n", 0),
        ("! false && echo negated", "negated\n", 0),
        ("echo a; echo b\necho c", "a\nb\nc\n", 0),
        ("echo a # comment", "a\n", 0),
        ("echo a \\\n b", "a b\n", 0),
        ("echo 'a  b' \"c  d\" e\\ f", "a  b c  d e f\n", 0),
        ("echo 'no $HOME' \"yes $HOME\" \\$HOME", "no $HOME yes /home/user $HOME\n", 0),
        ("echo ~ ~/x '~'", "/home/user /home/user/x ~\n", 0),
        ("X=1; echo $X ${X} ${X}y $Xy.", "1 1 1y .\n", 0),
        ("echo ${UNSET:-dflt} ${UNSET-d2} ${HOME:+set} ${#HOME}", "dflt d2 set 10\n", 0),
        ('X="a  b"; printf "[%s]" $X "$X"', "[a][b][a  b]", 0),
        ("echo $(echo inner) `echo tick` \"$(printf 'x y')\"", "inner tick x y\n", 0),
        ("X=$(false); echo $?", "1\n", 0),
        ("FOO=bar; echo $FOO; unset FOO; echo [$FOO]", "bar\n[]\n", 0),
        ("FOO=one env | grep FOO; echo [$FOO]", "FOO=one\n[]\n", 0),
        ("export A=1 B=2; sh -c 'echo $A$B'", "12\n", 0),
        ("cd /tmp && pwd && cd .. && pwd", "/tmp\n/\n", 0),
        ("cd /tmp; cd /etc; cd -; echo $OLDPWD", "/tmp\n/etc\n", 0),
        ("(cd /tmp; pwd); pwd", "/tmp\n/home/user\n", 0),
        ("echo x | cd /tmp; pwd", "/home/user\n", 0),
        ("exit 3; echo never", "", 3),
        ("false; exit", "", 1),
        ("sh -c 'exit 4'; echo $?", "4\n", 0),
        ("(exit 5); echo $?", "5\n", 0),
        ("set -e; echo a; false; echo b", "a\n", 1),
        ("set -e; false || true; false && true; echo survived", "survived\n", 0),
        ("false | true; echo $?", "0\n", 0),
        ("set -o pipefail; false | true; echo $?", "1\n", 0),
        ("bash -o pipefail -c 'false | true'; echo $?", "1\n", 0),
        ("bash -ec 'false; echo no'; echo $?", "1\n", 0),
        ('set -- a b c; echo $# $2 "$@"', "3 b a b c\n", 0),
        ("true; :; echo ok", "ok\n", 0),
    ],
)
def test_shell_lines(emu: CommandEmulator, line: str, out: str, code: int) -> None:
    result = sh(emu, line)
    assert result.stdout.decode() == out
    assert result.exit_code == code


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("echo 'open", "Unterminated quoted string"),
        ('echo "open', "Unterminated quoted string"),
        ("&& echo", '"&&" unexpected'),
        ("echo a | ", "end of file unexpected"),
        ("for i in 1 2; do echo $i; done", "unsupported shell construct: for"),
        ("if true; then echo; fi", "unsupported shell construct: if"),
        ("sleep 1 &", "background jobs"),
        ("echo $((1+2))", "arithmetic expansion"),
        ("echo ${", "Bad substitution"),
        ("(echo a", 'expecting ")"'),
    ],
)
def test_syntax_errors(emu: CommandEmulator, line: str, message: str) -> None:
    result = sh(emu, line)
    assert result.exit_code == 2
    assert result.stderr.decode().startswith("sh: 1: Syntax error: ")
    assert message in result.stderr.decode()


def test_sh_c_with_syntax_error_uses_its_own_status(emu: CommandEmulator) -> None:
    assert stdout(emu, "sh -c 'echo \"x'; echo $?") == "2\n"
    assert sh(emu, "sh -c").exit_code == 2


def test_pipes(emu: CommandEmulator) -> None:
    assert stdout(emu, "echo hello | cat") == "hello\n"
    assert stdout(emu, "printf 'b\\na\\nb\\n' | grep b | wc -l") == "2\n"
    result = sh(emu, "ls /missing | wc -l")
    assert result.stdout == b"0\n" and b"cannot access" in result.stderr
    assert stdout(emu, "ls /missing 2>&1 | grep -c cannot") == "1\n"
    assert stdout(emu, "cat | cat", stdin=b"piped stdin") == "piped stdin"
    assert sh(emu, "echo x | false").exit_code == 1
    assert sh(emu, "false | echo x").exit_code == 0


def test_redirections(emu: CommandEmulator, fs: FileSystem) -> None:
    assert sh(emu, "echo one > out.txt; echo two >> out.txt").stdout == b""
    assert fs.read("/home/user/out.txt") == b"one\ntwo\n"
    sh(emu, "echo three > out.txt")
    assert fs.read("/home/user/out.txt") == b"three\n"
    sh(emu, "ls /missing > both.txt 2>&1")
    assert b"cannot access" in fs.read("/home/user/both.txt")
    result = sh(emu, "ls /missing 2>&1 > only-out.txt")
    assert b"cannot access" in result.stdout and fs.read("/home/user/only-out.txt") == b""
    assert sh(emu, "ls /missing 2>/dev/null").stderr == b""
    assert sh(emu, "echo hidden >/dev/null").stdout == b""
    result = sh(emu, "echo to-err >&2")
    assert (result.stdout, result.stderr) == (b"", b"to-err\n")
    assert sh(emu, "echo to-err 1>&2 2>/dev/null").stderr == b"to-err\n"
    sh(emu, "ls / /missing &> all.txt")
    assert b"cannot access" in fs.read("/home/user/all.txt") and b"tmp" in fs.read("/home/user/all.txt")
    sh(emu, "> created.txt")
    assert fs.read("/home/user/created.txt") == b""
    assert stdout(emu, "cat < out.txt") == "three\n"
    assert stdout(emu, "echo x > /dev/stderr 2>&1; echo y > /dev/stdout") == "y\n"


def test_redirection_errors(emu: CommandEmulator) -> None:
    result = sh(emu, "echo a > /nope/file; echo $?")
    assert result.stderr == b"sh: 1: cannot create /nope/file: Directory nonexistent\n"
    assert result.stdout == b"2\n"
    result = sh(emu, "echo a > /tmp")
    assert result.stderr == b"sh: 1: cannot create /tmp: Is a directory\n" and result.exit_code == 2
    result = sh(emu, "cat < /nope")
    assert result.stderr == b"sh: 1: cannot open /nope: No such file\n" and result.exit_code == 2
    assert b"ambiguous redirect" in sh(emu, "echo a > $UNSET").stderr


def test_here_documents(emu: CommandEmulator, fs: FileSystem) -> None:
    assert stdout(emu, "cat <<EOF\nhi $USER\n  indented\nEOF\necho after") == "hi user\n  indented\nafter\n"
    assert stdout(emu, "cat <<'EOF'\nraw $USER `x`\nEOF") == "raw $USER `x`\n"
    assert stdout(emu, "cat <<-EOF\n\ttabbed\n\tEOF") == "tabbed\n"
    sh(emu, "cat > /tmp/conf <<EOF\nkey=$HOME\nEOF")
    assert fs.read("/tmp/conf") == b"key=/home/user\n"
    assert stdout(emu, "cat <<< 'here string'") == "here string\n"
    assert stdout(emu, "cat <<EOF | wc -l\na\nb\nEOF") == "2\n"


def test_globbing(emu: CommandEmulator, fs: FileSystem) -> None:
    for name in ("a.py", "b.py", "c.txt", ".hidden.py", "sub/d.py"):
        fs.write(f"/workspace/{name}", b"", parents=True)
    assert stdout(emu, "echo *.py", cwd="/workspace") == "a.py b.py\n"
    assert stdout(emu, "echo /workspace/*/*.py") == "/workspace/sub/d.py\n"
    assert stdout(emu, "echo ?.txt .*.py", cwd="/workspace") == "c.txt .hidden.py\n"
    assert stdout(emu, "echo '*.py' \\*.py nomatch*", cwd="/workspace") == "*.py *.py nomatch*\n"
    assert stdout(emu, "ls *.py", cwd="/workspace") == "a.py\nb.py\n"


def test_scripts_and_source(emu: CommandEmulator, fs: FileSystem) -> None:
    fs.write("/workspace/run.sh", b"#!/bin/sh\necho script $0 $1 $#\nexit 7\n")
    result = sh(emu, "sh run.sh one two", cwd="/workspace")
    assert (result.stdout, result.exit_code) == (b"script run.sh one 2\n", 7)
    denied = sh(emu, "./run.sh", cwd="/workspace")
    assert (denied.exit_code, denied.stderr) == (126, b"sh: 1: ./run.sh: Permission denied\n")
    sh(emu, "chmod +x run.sh", cwd="/workspace")
    assert sh(emu, "./run.sh x", cwd="/workspace").stdout == b"script ./run.sh x 1\n"
    assert sh(emu, "/workspace/missing.sh").exit_code == 127
    fs.write("/workspace/vars.sh", b"GREETING=hello\ncd /tmp\n")
    assert stdout(emu, ". /workspace/vars.sh; echo $GREETING; pwd") == "hello\n/tmp\n"
    assert sh(emu, "source /nope.sh").exit_code == 2
    assert sh(emu, "bash /nope.sh").exit_code == 127
    assert stdout(emu, "sh", stdin=b"echo from stdin\n") == "from stdin\n"


def test_shebang_dispatches_to_registered_interpreter(emu: CommandEmulator, fs: FileSystem) -> None:
    seen: list[tuple[str, ...]] = []

    def python(inv: Invocation) -> Iterator[Step]:
        seen.append(inv.argv)
        yield Output("stdout", b"py\n")

    emu.register("python3", python)
    fs.write("/workspace/tool.py", b"#!/usr/bin/env python3\nprint('py')\n", mode=0o755)
    assert stdout(emu, "/workspace/tool.py --flag") == "py\n"
    assert seen == [("python3", "/workspace/tool.py", "--flag")]


# -- builtins ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "out"),
    [
        ("echo a b", "a b\n"),
        ("echo", "\n"),
        ("echo -n a", "a"),
        ("echo -e 'a\\tb\\nc'", "a\tb\nc\n"),
        ("echo 'a\\tb'", "a\\tb\n"),
        ("echo -ne 'x\\x41\\0101'", "xAA"),
        ("echo -e 'stop\\cignored'", "stop"),
        ("echo -x", "-x\n"),
        ("printf '%s-%d\\n' a 1 b 2", "a-1\nb-2\n"),
        ("printf '%5s|%-3s|%03d|%x|%o|%%|%c\\n' ab c 7 255 8 xyz", "   ab|c  |007|ff|10|%|x\n"),
        ("printf 'no newline'", "no newline"),
        ("printf '%s\\n'", "\n"),
        ("printf '%b' 'a\\nb'", "a\nb"),
        ("printf '%.2f' 3.14159", "3.14"),
    ],
)
def test_echo_printf(emu: CommandEmulator, line: str, out: str) -> None:
    assert stdout(emu, line) == out


def test_printf_errors(emu: CommandEmulator) -> None:
    result = sh(emu, "printf '%d\\n' abc")
    assert (result.stdout, result.exit_code) == (b"0\n", 1)
    assert b"expected numeric value" in result.stderr
    assert sh(emu, "printf").exit_code == 2


def test_cat(emu: CommandEmulator, fs: FileSystem) -> None:
    fs.write("/tmp/a", b"A\n")
    fs.write("/tmp/b", b"B\n")
    assert stdout(emu, "cat /tmp/a /tmp/b") == "A\nB\n"
    assert stdout(emu, "cat /tmp/a - /tmp/b", stdin=b"-\n") == "A\n-\nB\n"
    result = sh(emu, "cat /tmp/a /tmp/missing /tmp")
    assert result.stdout == b"A\n" and result.exit_code == 1
    assert result.stderr == b"cat: /tmp/missing: No such file or directory\ncat: /tmp: Is a directory\n"


def test_ls(emu: CommandEmulator, fs: FileSystem) -> None:
    fs.write("/workspace/b.txt", b"12345")
    fs.write("/workspace/.dot", b"")
    fs.mkdir("/workspace/adir")
    assert stdout(emu, "ls /workspace") == "adir\nb.txt\n"
    assert stdout(emu, "ls -1 /workspace") == "adir\nb.txt\n"
    assert stdout(emu, "ls -a /workspace") == ".\n..\n.dot\nadir\nb.txt\n"
    assert stdout(emu, "ls -A /workspace") == ".dot\nadir\nb.txt\n"
    long = stdout(emu, "ls -l /workspace").splitlines()
    assert long[0] == "total 8"
    assert re.fullmatch(r"drwxr-xr-x 2 user user 4096 \w{3} [ \d]\d \d\d:\d\d adir", long[1])
    assert re.fullmatch(r"-rw-r--r-- 1 user user    5 \w{3} [ \d]\d \d\d:\d\d b\.txt", long[2])
    assert stdout(emu, "ls -la /workspace").splitlines()[1].endswith(" .")
    assert stdout(emu, "ls /workspace/b.txt") == "/workspace/b.txt\n"
    assert stdout(emu, "ls -d /workspace") == "/workspace\n"
    assert stdout(emu, "ls /workspace/b.txt /workspace/adir /etc") == (
        "/workspace/b.txt\n\n/workspace/adir:\n\n/etc:\nhostname\nhosts\npasswd\nresolv.conf\n"
    )
    assert stdout(emu, "ls", cwd="/workspace") == "adir\nb.txt\n"
    missing = sh(emu, "ls /missing")
    assert missing.exit_code == 2
    assert missing.stderr == b"ls: cannot access '/missing': No such file or directory\n"
    assert sh(emu, "ls -Z").exit_code == 2


def test_true_false_and_exit(emu: CommandEmulator) -> None:
    assert sh(emu, "true").exit_code == 0
    assert sh(emu, "false").exit_code == 1
    assert sh(emu, "exit 300").exit_code == 44
    result = sh(emu, "exit abc")
    assert result.exit_code == 2 and b"Illegal number: abc" in result.stderr


def test_sleep(emu: CommandEmulator) -> None:
    assert list(emu.run("sleep 2")) == [Sleep(2.0), Exit(0)]
    assert list(emu.run("sleep 1 0.5 1m")) == [Sleep(61.5), Exit(0)]
    assert list(emu.run("sleep 0")) == [Exit(0)]
    assert sh(emu, "sleep").exit_code == 1
    bad = sh(emu, "sleep abc")
    assert bad.exit_code == 1 and bad.stderr == b"sleep: invalid time interval 'abc'\n"
    result = emu.run_to_completion("sleep infinity", timeout=30)
    assert result.timed_out and result.slept == 30


def test_env_builtin(emu: CommandEmulator) -> None:
    assert "HOME=/home/user" in stdout(emu, "env").splitlines()
    assert stdout(emu, "env A=1 sh -c 'echo $A'") == "1\n"
    assert stdout(emu, "env -i B=2 env") == "B=2\n"
    assert stdout(emu, "env -u HOME env | grep -c HOME=") == "0\n"
    assert sh(emu, "env nope").exit_code == 127


def test_pwd_cd(emu: CommandEmulator) -> None:
    assert stdout(emu, "pwd", cwd="/tmp") == "/tmp\n"
    assert stdout(emu, "cd; pwd", cwd="/tmp") == "/home/user\n"
    assert stdout(emu, "cd ../../workspace && pwd") == "/workspace\n"
    result = sh(emu, "cd /missing; echo $?")
    assert result.stderr == b"sh: 1: cd: can't cd to /missing\n" and result.stdout == b"2\n"
    assert sh(emu, "cd /etc/hosts").exit_code == 2


def test_mkdir_rm_touch(emu: CommandEmulator, fs: FileSystem) -> None:
    assert sh(emu, "mkdir -p /tmp/a/b/c && mkdir -p /tmp/a/b/c").exit_code == 0
    assert fs.is_dir("/tmp/a/b/c")
    result = sh(emu, "mkdir /tmp/a")
    assert (result.exit_code, result.stderr) == (1, b"mkdir: cannot create directory '/tmp/a': File exists\n")
    assert b"No such file or directory" in sh(emu, "mkdir /tmp/x/y").stderr
    sh(emu, "mkdir -m 700 /tmp/private")
    assert fs.stat("/tmp/private").mode == 0o700
    assert sh(emu, "touch /tmp/a/f /tmp/a/g").exit_code == 0
    before = fs.stat("/tmp/a/f").mtime
    sh(emu, "touch /tmp/a/f")
    assert fs.stat("/tmp/a/f").mtime > before
    assert b"cannot touch '/nope/f'" in sh(emu, "touch /nope/f").stderr
    sh(emu, "touch -c /tmp/not-created")
    assert not fs.exists("/tmp/not-created")
    result = sh(emu, "rm /tmp/a")
    assert (result.exit_code, result.stderr) == (1, b"rm: cannot remove '/tmp/a': Is a directory\n")
    assert sh(emu, "rm /tmp/a/f").exit_code == 0 and not fs.exists("/tmp/a/f")
    assert sh(emu, "rm /tmp/missing").stderr == b"rm: cannot remove '/tmp/missing': No such file or directory\n"
    assert sh(emu, "rm -f /tmp/missing").exit_code == 0
    assert sh(emu, "rm -rf /tmp/a").exit_code == 0 and not fs.exists("/tmp/a")
    refused = sh(emu, "rm -rf /")
    assert refused.exit_code == 1 and b"dangerous" in refused.stderr and fs.exists("/etc/hosts")
    assert sh(emu, "rm").exit_code == 1
    sh(emu, "mkdir /tmp/e; rmdir /tmp/e")
    assert not fs.exists("/tmp/e")
    assert b"Directory not empty" in sh(emu, "rmdir /home").stderr


def test_head_tail_wc(emu: CommandEmulator, fs: FileSystem) -> None:
    fs.write("/tmp/n", "".join(f"{i}\n" for i in range(1, 21)))
    assert stdout(emu, "head -n 3 /tmp/n") == "1\n2\n3\n"
    assert stdout(emu, "head -2 /tmp/n") == "1\n2\n"
    assert stdout(emu, "head /tmp/n").count("\n") == 10
    assert stdout(emu, "head -c 4 /tmp/n") == "1\n2\n"
    assert stdout(emu, "tail -n 2 /tmp/n") == "19\n20\n"
    assert stdout(emu, "tail -n +19 /tmp/n") == "19\n20\n"
    assert stdout(emu, "tail -c 3 /tmp/n") == "20\n"
    assert stdout(emu, "echo abc | head -c 2") == "ab"
    assert stdout(emu, "head -n1 /tmp/n /etc/hostname") == "==> /tmp/n <==\n1\n\n==> /etc/hostname <==\nsandbox\n"
    assert sh(emu, "head -n x /tmp/n").exit_code == 1
    assert sh(emu, "head /missing").exit_code == 1
    assert stdout(emu, "wc -l /tmp/n") == "20 /tmp/n\n"
    assert stdout(emu, "printf 'a b\\nc' | wc -l") == "1\n"
    assert stdout(emu, "printf 'a b\\nc' | wc -c") == "5\n"
    assert stdout(emu, "printf 'a b\\nc' | wc -w") == "3\n"
    assert stdout(emu, "printf 'a b\\nc' | wc") == "      1       3       5\n"
    assert stdout(emu, "wc -l /tmp/n /etc/hostname") == "20 /tmp/n\n 1 /etc/hostname\n21 total\n"
    assert sh(emu, "wc /missing").exit_code == 1


@pytest.mark.parametrize(
    ("expr", "code"),
    [
        ("test -f /etc/hosts", 0),
        ("test -f /etc", 1),
        ("test -d /etc", 0),
        ("test -d /etc/hosts", 1),
        ("test -e /nope", 1),
        ("test -e /tmp", 0),
        ("test -s /etc/hosts", 0),
        ("test -x /tmp", 0),
        ("test -z ''", 0),
        ("test -n ''", 1),
        ("test abc", 0),
        ("test ''", 1),
        ("test", 1),
        ("[ a = a ]", 0),
        ("[ a != a ]", 1),
        ("[ a == b ]", 1),
        ("[ 2 -lt 10 ]", 0),
        ("[ 2 -gt 10 ]", 1),
        ("[ 3 -eq 3 ]", 0),
        ("[ 3 -ne 3 ]", 1),
        ("[ 3 -le 3 ] && [ 3 -ge 4 ]", 1),
        ("[ ! -e /nope ]", 0),
        ("[ -d /tmp -a -f /etc/hosts ]", 0),
        ("[ -d /nope -o -f /etc/hosts ]", 0),
        ('[ -n "$HOME" ]', 0),
        ("[ -f /etc/hosts", 2),
        ("[ x -lt 1 ]", 2),
        ("test a b c", 2),
    ],
)
def test_test_builtin(emu: CommandEmulator, expr: str, code: int) -> None:
    assert sh(emu, expr).exit_code == code


def test_identity_builtins(emu: CommandEmulator, fs: FileSystem) -> None:
    assert stdout(emu, "whoami") == "user\n"
    assert stdout(emu, "hostname") == "sandbox\n"
    assert stdout(emu, "uname") == "Linux\n"
    assert stdout(emu, "uname -a") == "Linux sandbox 6.1.0-sandbox #1 SMP x86_64 GNU/Linux\n"
    assert stdout(emu, "uname -sm") == "Linux x86_64\n"
    assert stdout(emu, "id") == "uid=1000(user) gid=1000(user) groups=1000(user)\n"
    assert stdout(emu, "id -u; id -un") == "1000\nuser\n"
    root = CommandEmulator(FileSystem(user="root", hostname="box"), gate=OpenGate())
    assert root.run_to_completion("whoami; id -u; hostname; echo $HOME").stdout == b"root\n0\nbox\n/root\n"


def test_which_and_command_v(emu: CommandEmulator, fs: FileSystem) -> None:
    assert stdout(emu, "which ls curl sh") == "/usr/bin/ls\n/usr/bin/curl\n/usr/bin/sh\n"
    result = sh(emu, "which ls nope")
    assert (result.stdout, result.exit_code) == (b"/usr/bin/ls\n", 1)
    assert sh(emu, "which cd").exit_code == 1
    assert stdout(emu, "command -v cd echo") == "cd\n/usr/bin/echo\n"
    assert sh(emu, "command -v nope").exit_code == 1
    assert stdout(emu, "/usr/bin/echo via path; /bin/sh -c 'echo nested'") == "via path\nnested\n"
    fs.write("/workspace/tool", b"echo tool", mode=0o755)
    assert stdout(emu, "which /workspace/tool") == "/workspace/tool\n"


def test_grep(emu: CommandEmulator, fs: FileSystem) -> None:
    fs.write("/tmp/g", b"apple\nBanana\ncherry pie\napple tart\n")
    fs.write("/tmp/h", b"apple juice\n")
    assert stdout(emu, "grep apple /tmp/g") == "apple\napple tart\n"
    assert stdout(emu, "grep -i banana /tmp/g") == "Banana\n"
    assert stdout(emu, "grep -v apple /tmp/g") == "Banana\ncherry pie\n"
    assert stdout(emu, "grep -c apple /tmp/g") == "2\n"
    assert stdout(emu, "grep -n tart /tmp/g") == "4:apple tart\n"
    assert stdout(emu, "grep -w app /tmp/g") == ""
    assert stdout(emu, "grep '^c.*e$' /tmp/g") == "cherry pie\n"
    assert stdout(emu, "grep -E 'pie|juice' /tmp/g /tmp/h") == "/tmp/g:cherry pie\n/tmp/h:apple juice\n"
    assert stdout(emu, "grep -F '.*' /tmp/g") == ""
    assert stdout(emu, "grep -l apple /tmp/g /tmp/h") == "/tmp/g\n/tmp/h\n"
    assert stdout(emu, "grep -e pie /tmp/g") == "cherry pie\n"
    quiet = sh(emu, "grep -q apple /tmp/g")
    assert (quiet.stdout, quiet.exit_code) == (b"", 0)
    assert sh(emu, "grep zzz /tmp/g").exit_code == 1
    missing = sh(emu, "grep a /missing")
    assert missing.exit_code == 2 and missing.stderr == b"grep: /missing: No such file or directory\n"
    assert stdout(emu, "grep b", stdin=b"a\nb\n") == "b\n"
    assert sh(emu, "grep").exit_code == 2
    assert sh(emu, "grep -E '('").exit_code == 2


def test_unknown_command(emu: CommandEmulator) -> None:
    result = sh(emu, "frobnicate --now")
    assert (result.stdout, result.exit_code) == (b"", 127)
    assert result.stderr.startswith(b"sh: 1: frobnicate: not found (sandproof's command emulator")
    assert stdout(emu, "frobnicate; echo $?") == "127\n"


def test_file_utilities(emu: CommandEmulator, fs: FileSystem) -> None:
    fs.write("/tmp/src/a.txt", b"A", parents=True, mode=0o600)
    fs.write("/tmp/src/sub/b.txt", b"B", parents=True)
    assert sh(emu, "cp /tmp/src/a.txt /tmp/copy.txt").exit_code == 0
    assert fs.read("/tmp/copy.txt") == b"A" and fs.stat("/tmp/copy.txt").mode == 0o600
    assert b"-r not specified" in sh(emu, "cp /tmp/src /tmp/dst").stderr
    sh(emu, "cp -r /tmp/src /tmp/dst")
    assert fs.read("/tmp/dst/sub/b.txt") == b"B"
    sh(emu, "mkdir /tmp/into; cp /tmp/copy.txt /tmp/src/a.txt /tmp/into")
    assert [i.name for i in fs.listdir("/tmp/into")] == ["a.txt", "copy.txt"]
    assert b"cannot stat" in sh(emu, "cp /nope /tmp/x").stderr
    sh(emu, "mv /tmp/copy.txt /tmp/moved.txt && mv /tmp/moved.txt /tmp/into")
    assert fs.exists("/tmp/into/moved.txt") and not fs.exists("/tmp/copy.txt")
    assert b"cannot stat" in sh(emu, "mv /nope /tmp/x").stderr
    assert sh(emu, "mv /tmp/a").exit_code == 1
    sh(emu, "chmod 755 /tmp/into/moved.txt")
    assert fs.stat("/tmp/into/moved.txt").mode == 0o755
    sh(emu, "chmod go-rx,u-w /tmp/into/moved.txt")
    assert fs.stat("/tmp/into/moved.txt").mode == 0o500
    sh(emu, "chmod -R a+rX /tmp/dst")
    assert fs.stat("/tmp/dst/sub").mode == 0o755 and fs.stat("/tmp/dst/sub/b.txt").mode == 0o644
    assert sh(emu, "chmod zz /tmp/dst").exit_code == 1
    assert b"cannot access" in sh(emu, "chmod 600 /nope").stderr
    assert stdout(emu, "echo teed | tee /tmp/t1 /tmp/t2") == "teed\n"
    sh(emu, "echo more | tee -a /tmp/t1")
    assert fs.read("/tmp/t1") == b"teed\nmore\n" and fs.read("/tmp/t2") == b"teed\n"
    assert stdout(emu, "find /tmp/src -name '*.txt'") == "/tmp/src/a.txt\n/tmp/src/sub/b.txt\n"
    assert stdout(emu, "find /tmp/src -type d") == "/tmp/src\n/tmp/src/sub\n"
    assert stdout(emu, "find . -maxdepth 1 -type f", cwd="/tmp/src") == "./a.txt\n"
    assert sh(emu, "find /nope").exit_code == 1
    assert sh(emu, "find / -bogus x").exit_code == 1
    assert stdout(emu, "basename /a/b/c.txt .txt; dirname /a/b/c.txt; dirname c") == "c\n/a/b\n.\n"


def test_read_builtin(emu: CommandEmulator) -> None:
    assert stdout(emu, "read a b <<< 'one two three'; echo $b-$a") == "two three-one\n"
    assert sh(emu, "read x").exit_code == 1


def test_timeout_builtin(emu: CommandEmulator) -> None:
    result = emu.run_to_completion("timeout 2 sleep 10; echo $?")
    assert (result.stdout, result.slept) == (b"124\n", 2.0)
    assert stdout(emu, "timeout 5 sh -c 'sleep 1; echo fine'") == "fine\n"
    assert sh(emu, "timeout").exit_code == 125


# -- handlers ----------------------------------------------------------------------------------------


def test_registered_handler(emu: CommandEmulator) -> None:
    calls: list[Invocation] = []

    def python(inv: Invocation) -> Iterator[Step]:
        calls.append(inv)
        yield Output("stdout", b"started\n")
        yield Sleep(2)
        yield Output("stderr", inv.stdin.upper())
        yield Exit(5)
        yield Output("stdout", b"after exit is ignored")

    emu.register("python", python)
    result = emu.run_to_completion("echo data | FOO=1 python -c 'print(1)'", cwd="/tmp")
    assert (result.stdout, result.stderr, result.exit_code, result.slept) == (b"started\n", b"DATA\n", 5, 2.0)
    inv = calls[0]
    assert inv.argv == ("python", "-c", "print(1)") and inv.cwd == "/tmp" and inv.env["FOO"] == "1"
    assert "python" in emu.commands


def test_handlers_override_builtins_and_default_exit(fs: FileSystem) -> None:
    def fake_ls(inv: Invocation) -> Iterator[Step]:
        yield Output("stdout", b"custom\n")

    def broken(inv: Invocation) -> Iterator[Step]:
        inv.fs.read("/missing")
        yield Exit(0)

    emu = CommandEmulator(fs, gate=OpenGate(), handlers={"ls": fake_ls, "broken": broken})
    assert emu.run_to_completion("ls /").stdout == b"custom\n"
    assert emu.run_to_completion("ls /").exit_code == 0
    failed = emu.run_to_completion("broken")
    assert (failed.exit_code, failed.stderr) == (1, b"broken: No such file or directory\n")


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=40))
def test_quoting_round_trip(text: str) -> None:
    emu = CommandEmulator(FileSystem(), gate=OpenGate())
    result = emu.run_to_completion(f"printf '%s' {shlex.quote(text)}")
    assert result.stdout.decode() == text
    via_env = emu.run_to_completion('printf %s "$X"', env={"X": text})
    assert via_env.stdout.decode() == text


# -- egress probes -----------------------------------------------------------------------------------


def test_getent(emu: CommandEmulator, gate: RecordingGate) -> None:
    assert stdout(emu, "getent hosts example.com") == "93.184.216.34   example.com\n"
    assert (
        stdout(emu, "getent hosts api.example.com")
        == "10.1.2.3        api.example.com\n10.1.2.4        api.example.com\n"
    )
    assert stdout(emu, "getent hosts localhost") == "127.0.0.1       localhost\n::1             localhost\n"
    assert "localhost" not in gate.resolved
    gate.resolved.clear()
    assert stdout(emu, "getent hosts 1.2.3.4") == "1.2.3.4         1.2.3.4\n"
    assert gate.resolved == []
    missing = sh(emu, "getent hosts nx.invalid")
    assert (missing.stdout, missing.exit_code) == (b"", 2)
    assert "user:x:1000" in stdout(emu, "getent passwd user")
    assert sh(emu, "getent nope x").exit_code == 1


def test_nslookup(emu: CommandEmulator) -> None:
    result = sh(emu, "nslookup api.example.com")
    assert result.exit_code == 0
    assert result.stdout.decode() == (
        "Server:\t\t100.64.0.53\nAddress:\t100.64.0.53#53\n\nNon-authoritative answer:\n"
        "Name:\tapi.example.com\nAddress: 10.1.2.3\nName:\tapi.example.com\nAddress: 10.1.2.4\n\n"
    )
    nx = sh(emu, "nslookup nx.invalid")
    assert nx.exit_code == 1 and "** server can't find nx.invalid: NXDOMAIN" in nx.stdout.decode()


def test_probes_when_dns_is_blocked(fs: FileSystem, http: HttpTable) -> None:
    gate = DnsBlockedGate()
    emu = CommandEmulator(fs, gate=gate, http=http)
    getent = emu.run_to_completion("getent hosts example.com")
    assert (getent.stdout, getent.exit_code) == (b"", 2)
    ns = emu.run_to_completion("nslookup example.com")
    assert (ns.stdout, ns.exit_code) == (b";; connection timed out; no servers could be reached\n\n", 1)
    curl = emu.run_to_completion("curl https://example.com/")
    assert (curl.stderr, curl.exit_code) == (b"curl: (6) Could not resolve host: example.com\n", 6)
    assert emu.run_to_completion("curl -s https://example.com/").stderr == b""
    assert emu.run_to_completion("curl -sS https://example.com/").stderr.startswith(b"curl: (6)")
    code = emu.run_to_completion("curl -s -o /dev/null -w '%{http_code}' example.com")
    assert (code.stdout, code.exit_code) == (b"000", 6)
    wget = emu.run_to_completion("wget -qO- http://example.com")
    assert (wget.stderr, wget.exit_code) == (b"wget: unable to resolve host address 'example.com'\n", 4)
    ping = emu.run_to_completion("ping -c 1 example.com")
    assert (ping.stderr, ping.exit_code) == (b"ping: example.com: Temporary failure in name resolution\n", 2)
    nc = emu.run_to_completion("nc -z example.com 443")
    assert nc.exit_code == 1 and b"Temporary failure in name resolution" in nc.stderr
    assert gate.connects == []
    assert emu.run_to_completion("curl -s http://1.2.3.4/").stdout == b"ok\n"
    assert emu.run_to_completion("curl -s http://localhost:8080/").stdout == b"ok\n"
    assert gate.connects == [(None, "1.2.3.4", 80), ("localhost", "127.0.0.1", 8080)]


def test_probes_when_connect_is_denied(fs: FileSystem, http: HttpTable) -> None:
    gate = RecordingGate(allow=False)
    emu = CommandEmulator(fs, gate=gate, http=http)
    assert emu.run_to_completion("getent hosts example.com").exit_code == 0
    curl = emu.run_to_completion("curl https://example.com/")
    assert curl.exit_code == 7
    assert curl.stderr == (
        b"curl: (7) Failed to connect to example.com port 443 after 0 ms: Couldn't connect to server\n"
    )
    assert emu.run_to_completion("curl -sf http://example.com:8080/x").exit_code == 7
    wget = emu.run_to_completion("wget -O- http://example.com")
    assert wget.exit_code == 4 and b"failed: Connection refused." in wget.stderr
    ping = emu.run_to_completion("ping -c 3 example.com")
    assert ping.exit_code == 1 and b"3 packets transmitted, 0 received, 100% packet loss" in ping.stdout
    nc = emu.run_to_completion("nc -zv example.com 22")
    assert (nc.exit_code, nc.stderr) == (1, b"nc: connect to example.com port 22 (tcp) failed: Connection refused\n")
    assert gate.connects == [
        ("example.com", "93.184.216.34", 443),
        ("example.com", "93.184.216.34", 8080),
        ("example.com", "93.184.216.34", 80),
        ("example.com", "93.184.216.34", 0),
        ("example.com", "93.184.216.34", 22),
    ]


def test_curl_responses(emu: CommandEmulator, fs: FileSystem, gate: RecordingGate) -> None:
    assert stdout(emu, "curl -s https://example.com") == "ok\n"
    assert stdout(emu, "curl -s api.example.com/v1/anything") == '{"api": true}\n'
    assert gate.connects[-1] == ("api.example.com", "10.1.2.3", 80)
    missing = sh(emu, "curl -s https://example.com/missing")
    assert (missing.stdout, missing.exit_code) == (b"nope\n", 0)
    failed = sh(emu, "curl -fsS https://example.com/missing")
    assert (failed.stdout, failed.exit_code) == (b"", 22)
    assert failed.stderr == b"curl: (22) The requested URL returned error: 404\n"
    assert stdout(emu, "curl -s -o /dev/null -w '%{http_code}\\n' https://example.com/missing") == "404\n"
    assert stdout(emu, "curl -s -X POST https://example.com/submit") == "created\n"
    assert stdout(emu, "curl -s -d 'a=1' https://example.com/submit") == "created\n"
    head = stdout(emu, "curl -sI https://example.com/submit -X POST")
    assert head == "HTTP/1.1 201 Created\r\ncontent-length: 8\r\ncontent-type: text/plain\r\n\r\n"
    assert stdout(emu, "curl -si https://example.com/").endswith("\r\n\r\nok\n")
    assert sh(emu, "curl -s -o page.html https://example.com/").stdout == b""
    assert fs.read("/home/user/page.html") == b"ok\n"
    assert sh(emu, "curl -s -o /nope/page https://example.com/").exit_code == 23
    assert stdout(emu, "curl -s http://example.com/old") == ""
    assert stdout(emu, "curl -sL http://example.com/old") == "moved here\n"
    assert sh(emu, "curl ftp://example.com/").exit_code == 1
    assert sh(emu, "curl").exit_code == 2
    assert sh(emu, "curl --bogus http://example.com").exit_code == 2
    assert sh(emu, "curl -s --max-time").exit_code == 2


def test_curl_delay_and_timeout(emu: CommandEmulator) -> None:
    assert list(emu.run("curl -s http://example.com/slow")) == [Sleep(5.0), Output("stdout", b"slow\n"), Exit(0)]
    steps = list(emu.run("curl -sS --max-time 2 http://example.com/slow"))
    assert steps[0] == Sleep(2.0) and steps[-1] == Exit(28)
    assert Output("stderr", b"curl: (28) Operation timed out after 2000 milliseconds with 0 bytes received\n") in steps
    assert sh(emu, "curl -s -m 10 http://example.com/slow").exit_code == 0


def test_wget(emu: CommandEmulator, fs: FileSystem) -> None:
    assert stdout(emu, "wget -qO- http://example.com") == "ok\n"
    assert stdout(emu, "wget -q -O - https://api.example.com/x") == '{"api": true}\n'
    verbose = sh(emu, "wget -O- http://example.com")
    assert b"HTTP request sent, awaiting response... 200 OK" in verbose.stderr
    sh(emu, "wget -q http://example.com/", cwd="/tmp")
    assert fs.read("/tmp/index.html") == b"ok\n"
    sh(emu, "wget -q -O saved.txt http://example.com/new", cwd="/tmp")
    assert fs.read("/tmp/saved.txt") == b"moved here\n"
    missing = sh(emu, "wget -O- https://example.com/missing")
    assert missing.exit_code == 8 and b"ERROR 404: Not Found." in missing.stderr
    assert sh(emu, "wget -q -T 1 http://example.com/slow").exit_code == 4
    assert sh(emu, "wget -q -T x http://example.com/").exit_code == 2
    assert sh(emu, "wget").exit_code == 1


def test_ping_and_nc(emu: CommandEmulator, gate: RecordingGate) -> None:
    steps = list(emu.run("ping -c 3 example.com"))
    assert steps.count(Sleep(1.0)) == 2 and steps[-1] == Exit(0)
    text = b"".join(s.data for s in steps if isinstance(s, Output)).decode()
    assert text.startswith("PING example.com (93.184.216.34) 56(84) bytes of data.\n")
    assert "3 packets transmitted, 3 received, 0% packet loss" in text
    assert gate.connects[-1] == ("example.com", "93.184.216.34", 0)
    endless = emu.run_to_completion("ping 8.8.8.8", timeout=10)
    assert endless.timed_out and endless.stdout.count(b"icmp_seq=") == 11
    assert (None, "8.8.8.8", 0) in gate.connects
    nx = sh(emu, "ping -c 1 nx.invalid")
    assert (nx.exit_code, nx.stderr) == (2, b"ping: nx.invalid: Name or service not known\n")
    assert sh(emu, "ping").exit_code == 1
    ok = sh(emu, "nc -zv example.com 443")
    assert ok.exit_code == 0 and b"succeeded" in ok.stderr
    assert sh(emu, "nc -z nx.invalid 443").exit_code == 1
    assert sh(emu, "nc example.com").exit_code == 1


def test_gate_can_be_swapped_at_runtime(emu: CommandEmulator) -> None:
    assert sh(emu, "curl -s https://example.com").exit_code == 0
    emu.gate = DnsBlockedGate()
    assert sh(emu, "curl -s https://example.com").exit_code == 6


def test_http_table_lookup_order() -> None:
    table = HttpTable(
        {
            "example.com": HttpResponse(200, b"host"),
            "example.com:8443": HttpResponse(200, b"hostport"),
            "https://example.com/a": HttpResponse(200, b"url"),
            "delete https://example.com/a": HttpResponse(204, b""),
        },
        default=HttpResponse(418, b"teapot"),
    )
    assert table.lookup("GET", "https://EXAMPLE.com/a?q=1").body == b"url"
    assert table.lookup("DELETE", "https://example.com/a").status == 204
    assert table.lookup("GET", "https://example.com/b").body == b"host"
    assert table.lookup("GET", "https://example.com:8443/b").body == b"hostport"
    assert table.lookup("GET", "http://other.org/").status == 418
    table["other.org"] = HttpResponse(200, b"added")
    assert table.lookup("GET", "other.org").body == b"added"
    assert "OTHER.org" in table


def test_fs_error_is_exported() -> None:
    assert issubclass(FsError, Exception)


def test_runaway_recursion_is_cut_off(emu: CommandEmulator, fs: FileSystem) -> None:
    fs.write("/tmp/self.sh", b"echo x\n/tmp/self.sh\n", mode=0o755)
    fs.write("/tmp/src.sh", b". /tmp/src.sh\n")
    nested = sh(emu, "/tmp/self.sh")
    assert nested.exit_code == 2 and b"maximum nesting depth exceeded" in nested.stderr
    assert 10 < nested.stdout.count(b"x") <= 50
    sourced = sh(emu, ". /tmp/src.sh")
    assert sourced.exit_code == 2 and b"maximum nesting depth exceeded" in sourced.stderr


@pytest.mark.parametrize("line", ["ping -c1 example.com", "ping -c 1 example.com", "ping -i0.5 -c1 example.com"])
def test_ping_takes_the_count_attached_to_its_flag(emu: CommandEmulator, line: str) -> None:
    result = emu.run_to_completion(line, timeout=30)
    assert not result.timed_out, f"{line!r} never ended"
    assert result.exit_code == 0 and result.stdout.count(b"icmp_seq=") == 1
    assert b"1 packets transmitted, 1 received" in result.stdout


def test_su_runs_a_command_as_another_user(fs: FileSystem) -> None:
    root = CommandEmulator(FileSystem(now=Clock(), user="root"))
    assert root.run_to_completion("su -c 'echo $USER $HOME'").stdout == b"root /root\n"
    assert root.run_to_completion("cd /tmp; su - root -c pwd").stdout == b"/root\n"
    assert root.run_to_completion("echo 'echo piped' | su").stdout == b"piped\n"
    assert root.run_to_completion("su ghost -c true").exit_code == 1
    user = CommandEmulator(fs)
    denied = user.run_to_completion("su -c id")
    assert (denied.exit_code, denied.stderr) == (1, b"su: Authentication failure\n")
    assert user.run_to_completion("su user -c 'echo $USER'").stdout == b"user\n"


@pytest.mark.parametrize(
    "line",
    ["for i in 1 2; do echo $i; done", "if true; then echo; fi", "echo $((1+2))", "sleep 1 &", "python3 -V", "node -v"],
)
def test_what_the_emulator_cannot_run_says_so_and_names_the_real_runtime(emu: CommandEmulator, line: str) -> None:
    message = sh(emu, line).stderr.decode()
    assert "sandproof's command emulator" in message and "docs/emulator.md" in message
    assert "--runtime linux" in message


def test_real_syntax_errors_do_not_blame_the_emulator(emu: CommandEmulator) -> None:
    assert "emulator" not in sh(emu, "echo 'open").stderr.decode()
    assert sh(emu, "/tmp/missing").stderr == b"sh: 1: /tmp/missing: not found\n"


def test_a_write_beyond_the_quota_fails_with_no_space_left(fs: FileSystem) -> None:
    small = FileSystem(now=Clock(), quota=1024)
    emu = CommandEmulator(small)
    result = emu.run_to_completion('printf "%02000d" 0 > /tmp/f; wc -c < /tmp/f')
    assert result.stderr == b"sh: 1: write error: No space left on device\n"
    assert result.stdout.strip() == b"0" and small.used < 1024
    big = CommandEmulator(fs).run_to_completion('printf "%050000000d" 0 > /tmp/f; wc -c < /tmp/f')
    assert b"No space left on device" in big.stderr and fs.used < 20 * 1024 * 1024


def test_a_line_run_again_reuses_its_parse_and_a_bad_one_fails_each_time(emu: CommandEmulator) -> None:
    from mockserver.sandbox.shell import CACHED_SOURCE_CHARS, parse

    assert parse("echo cached") is parse("echo cached")
    long_line = "echo " + "x" * CACHED_SOURCE_CHARS
    assert parse(long_line) is not parse(long_line)
    assert parse(long_line) == parse(long_line)
    for _ in range(2):
        assert sh(emu, "echo 'open").exit_code == 2
    # A reused parse runs afresh: its here-document and its words are expanded on each run.
    emu.fs.write("/home/user/x", b"1")
    line = "cat <<EOF\n$(cat x)\nEOF\necho *"
    assert stdout(emu, line) == "1\nx\n"
    emu.fs.write("/home/user/x", b"2")
    emu.fs.write("/home/user/y", b"")
    assert stdout(emu, line) == "2\nx y\n"
