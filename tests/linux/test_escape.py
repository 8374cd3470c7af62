"""Escape tests: host files, processes, privileges, the firewall and the files API all stay out of reach.

(Nothing on the host's loopback or network is reachable: see ``test_world.py``.)
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

import pytest

from contracts import tensorlake as tl
from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.confine import PathError
from mockserver.tensorlake.linux_egress import tensorlake_apply

from .conftest import needs_runtime

pytestmark = needs_runtime


def test_host_files_outside_the_read_only_mounts_are_invisible(sandbox: LinuxSandbox) -> None:
    marker = f"sandproof-marker-{secrets.token_hex(4)}"
    with tempfile.NamedTemporaryFile(prefix=marker, dir="/tmp") as host_file:
        found = sandbox.run(f"find / -name '{marker}*' 2>/dev/null; ls -A /root /tmp /var; ls /work /dev | head -50")
        listing = found.stdout.decode()
        assert marker not in listing
        assert os.path.basename(host_file.name) not in listing
    assert sandbox.run("ls -A /root /home /work /workspace").stdout.split() == [
        b"/home:",
        b"/root:",
        b"/work:",
        b"/workspace:",
    ]  # the sandbox's own, empty, whatever the host keeps in its folders of the same names
    assert sandbox.run("test -e /dev/vda || test -e /dev/sda || test -e /dev/mem; echo $?").stdout == b"1\n"
    assert sandbox.run(f"test -e {sandbox.layout.base}; echo $?").stdout == b"1\n"  # its own host folder


def test_system_folders_are_read_only_and_secrets_unreadable(sandbox: LinuxSandbox) -> None:
    result = sandbox.run(
        "touch /usr/bin/evil 2>&1; sh -c 'echo x >> /etc/hosts' 2>&1; cat /etc/shadow 2>&1; touch /etc/new 2>&1; echo done"
    )
    text = result.stdout.decode()
    assert text.count("Read-only file system") == 2 and "cannot create /etc/hosts" in text
    assert "/etc/shadow: Permission denied" in text and text.endswith("done\n")
    assert not Path("/usr/bin/evil").exists() and not Path("/etc/new").exists()


def test_sandbox_root_is_an_unprivileged_host_user(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    sandbox.run("echo mine > /tmp/owned; mkdir -p /data/x")
    assert os.stat(sandbox.host_path("/tmp/owned")).st_uid == runtime.uid_base
    assert sandbox.run("id -u; cat /proc/self/uid_map").stdout.split()[:4] == [
        b"0",
        b"0",
        str(runtime.uid_base).encode(),
        b"65536",
    ]
    assert sandbox.read_file("/data/x/../../tmp/owned") == b"mine\n"  # a new top-level folder is a real one


def test_host_processes_are_invisible(sandbox: LinuxSandbox) -> None:
    me = os.getpid()
    result = sandbox.run(f"ps -e -o pid= | wc -l; test -e /proc/{me}/cmdline; echo $?; kill -0 {me} 2>&1; echo $?")
    count, missing, *_rest, kill_rc = result.stdout.decode().split("\n")[:-1]
    assert int(count) <= 5 and missing == "1" and kill_rc == "1"
    assert sandbox.run("cat /proc/1/cmdline").stdout.startswith(b"/usr/bin/python3")


def test_the_firewall_and_addresses_cannot_be_changed_from_inside(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    tensorlake_apply(sandbox.firewall, tl.NetworkConfig(True, (), ("192.0.2.66",)), runtime.dns)
    before = sandbox.firewall.ruleset()
    attempts = sandbox.run(
        "nft flush ruleset 2>&1; echo nft=$?; ip link set eth0 down 2>&1; echo link=$?; "
        "ip addr add 192.0.2.66/32 dev lo 2>&1; echo addr=$?; "
        "unshare -Urn sh -c 'nft flush ruleset; echo inner=$?' 2>&1"
    ).stdout.decode()
    for step in ("nft=", "link=", "addr="):
        assert f"{step}0" not in attempts, attempts
    assert sandbox.firewall.ruleset() == before
    probe = "import socket\ntry:\n socket.create_connection(('192.0.2.66', 7), timeout=3); print('open')\nexcept OSError: print('blocked')"
    assert sandbox.run(["python3", "-c", probe]).stdout == b"blocked\n"


def test_files_api_traversal_is_refused(sandbox: LinuxSandbox) -> None:
    with pytest.raises(PathError) as secret:
        sandbox.read_file("/tmp/../../../etc/shadow")
    assert secret.value.code == "permission_denied"
    with pytest.raises(PathError) as system:
        sandbox.write_file("/workspace/../../usr/bin/evil", b"x")
    assert system.value.code == "read_only"
    sandbox.run(f"ln -s / /tmp/rootlink; ln -s /proc/1/root /tmp/proclink; ln -s {sandbox.layout.base} /tmp/hostlink")
    with pytest.raises(PathError):
        sandbox.read_file("/tmp/rootlink/etc/shadow")
    with pytest.raises(PathError) as hidden:
        sandbox.read_file("/tmp/proclink/etc/hostname")
    assert hidden.value.code == "not_visible"
    with pytest.raises((PathError, FileNotFoundError)):  # followed inside the sandbox: not the host's folder
        sandbox.read_file("/tmp/hostlink/etc/hosts")
    assert sandbox.read_file("/tmp/rootlink/etc/hostname") == f"{sandbox.hostname}\n".encode()


def test_another_sandboxs_files_are_out_of_reach(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    other = runtime.create_sandbox()
    try:
        other.write_file("/tmp/private", b"other's secret")
        host = other.host_path("/tmp/private")
        assert sandbox.run(f"cat {host} 2>&1; ls /tmp").stdout.find(b"other's secret") == -1
        with pytest.raises((PathError, FileNotFoundError)):
            sandbox.read_file(str(host))
    finally:
        other.destroy()


def test_no_runtime_fd_is_inherited(sandbox: LinuxSandbox) -> None:
    held = sandbox.run("for fd in /proc/self/fd/* /proc/1/fd/*; do readlink $fd; done").stdout.decode().split()
    assert held and not any(target.startswith(("user:", "net:", "mnt:")) for target in held), held
    nested = sandbox.run("python3 -c 'import os; os.fstat(3)' 2>&1; echo $?").stdout.decode()
    assert "Bad file descriptor" in nested and nested.endswith("1\n")  # fd 3 (bubblewrap's --userns) is closed


def test_mountinfo_names_no_host_folder(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    mounts = sandbox.run("cat /proc/self/mountinfo").stdout.decode()
    assert f"{sandbox.id}/etc/hostname /etc/hostname" in mounts  # the binds are listed, from the state's own root
    if runtime.state_dir.parent != Path("/dev/shm"):
        pytest.skip("the state folder is on a disk: it keeps its host path (docs/runtime.md)")
    assert str(runtime.state_dir) not in mounts and "sandproof-linux-" not in mounts, mounts
