"""A sandbox's file system on the host, and the bubblewrap command line that builds its namespaces.

Under ``<state>/<sandbox id>/``:

* ``root/`` is the sandbox's ``/``, writable and owned by the sandbox's root (the runtime's unprivileged
  host uid): a tmpfs of its own, whose size is the sandbox's disk limit (``df /`` inside shows it; writes
  past it fail with ``ENOSPC``), unmounted when the sandbox goes. It starts with :data:`WRITABLE_DIRS` (``/tmp``, ``/root``, ``/home``, ``/workspace``, ``/work``
  and ``/var/tmp``, the working directories the SDKs and their docs use), and any directory a process
  makes at the top level lands here too, so the files APIs see it.
* ``etc/`` holds the generated ``hosts``, ``hostname`` and ``resolv.conf`` (naming the world's resolver),
  mounted read-only over the host's.
* ``init.log`` collects what bubblewrap and the init write to stderr.

On top of ``root/`` bubblewrap mounts the host's system folders read-only (:data:`SYSTEM_DIRS`, symlinks
such as ``/bin -> usr/bin`` are recreated as symlinks), a new ``/proc`` for the sandbox's PID namespace, a
minimal ``/dev`` with its own ``devpts``, tmpfs on ``/run`` and ``/dev/shm``, and the init's code read-only
at ``/.sandproof`` (compiled once per runtime by the guest interpreter, see :func:`prepare_guest_code`).
``/sys`` is not mounted.

The sandbox runs in new mount, PID, IPC and UTS namespaces (bubblewrap's) and in the network namespace the
runtime prepared (joined before bubblewrap starts), inside the runtime's user namespace, where its root is
an unprivileged host uid: root inside, nobody special outside. Capabilities are Docker's default set
(:data:`CAPABILITIES`); none of them applies to the network namespace, which belongs to the host's user
namespace, so no process in the sandbox can change its firewall or addresses. Bubblewrap's
``--die-with-parent`` ends the sandbox if the runtime's process dies.

Known deviations: there is no image: the system folders (``/usr``, ``/etc``...) are the host's, read-only,
so the sandbox sees the host's distribution and programs, cannot install packages under ``/usr`` or edit
``/etc``, and ``image`` requests choose nothing; ``/sys`` is absent; the sandbox's root is uid 0 only inside
its user namespace (files it writes belong to the runtime's unprivileged host uid range); processes run
as root whatever ``user`` a request names.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .addresses import RESOLVER
from .confine import Mount
from .kernel import KernelError, mount_tmpfs, resize_tmpfs, unmount
from .standalone import GUEST_DIR, GUEST_MOUNT

__all__ = [
    "CAPABILITIES",
    "CLOCK_FILE",
    "HIDDEN_DIRS",
    "KERNEL_PATH",
    "SYSTEM_DIRS",
    "WRITABLE_DIRS",
    "Layout",
    "bwrap_command",
    "find_bwrap",
    "prepare_guest_code",
    "release_mounts",
]

WRITABLE_DIRS: Mapping[str, int] = {
    "/tmp": 0o1777,
    "/root": 0o700,
    "/home": 0o755,
    "/workspace": 0o755,
    "/work": 0o755,
    "/var": 0o755,
    "/var/tmp": 0o1777,
}
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
HIDDEN_DIRS = ("/proc", "/dev", "/run", "/sys")
ETC_FILES = ("hosts", "hostname", "resolv.conf")
CAPABILITIES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_RAW",
    "CAP_SYS_CHROOT",
    "CAP_MKNOD",
    "CAP_AUDIT_WRITE",
    "CAP_SETFCAP",
)


GUEST_FILES = ("init.py", "wire.py")
#: The clock-following ``sleep`` (``standalone/sleep.sh``) and the host's real one, in the guest folder.
SLEEP_SHIM, SLEEP_REAL = "sleep", "sleep.real"
#: Where the shim is bound in each sandbox (``/bin`` is ``/usr/bin`` or holds its own ``sleep``).
SLEEP_TARGETS = ("/usr/bin/sleep", "/bin/sleep")
#: The file in the guest folder the runtime writes the mock's clock to (see :class:`ClockFile`).
CLOCK_FILE = "clock"
#: Programs copied as source (run by the sandbox's own ``python3``, whichever it is): the code-context kernel.
GUEST_SOURCES = ("kernel.py",)
#: Where a sandbox finds the Python code-context kernel (see ``standalone/kernel.py``).
KERNEL_PATH = f"{GUEST_MOUNT}/kernel.py"
_COMPILE = (
    "import py_compile, sys\n"
    "for source, target in zip(sys.argv[1::2], sys.argv[2::2]):\n"
    "    py_compile.compile(source, cfile=target, doraise=True)\n"
)


def prepare_guest_code(python: str, directory: Path) -> str:
    """Fill ``directory`` with the init's code compiled by the guest ``python``; return the entry file's name.

    The sandbox's interpreter then loads bytecode instead of compiling the init at every start (a few
    milliseconds each time). Only ``.pyc`` files go in, so the import of ``wire`` is sourceless too. If the
    compilation fails, the sources are copied instead and the entry is ``init.py``.
    """
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    os.chmod(directory, 0o755)
    pairs = [(str(GUEST_DIR / name), str(directory / (name + "c"))) for name in GUEST_FILES]
    done = subprocess.run(
        [python, "-S", "-E", "-s", "-c", _COMPILE, *[p for pair in pairs for p in pair]],
        capture_output=True,
        check=False,
    )
    if done.returncode == 0:
        entry = "init.pyc"
    else:
        for name in GUEST_FILES:
            shutil.copyfile(GUEST_DIR / name, directory / name)
        entry = "init.py"
    for name in GUEST_SOURCES:
        shutil.copyfile(GUEST_DIR / name, directory / name)
    for child in directory.iterdir():
        os.chmod(child, 0o644)
    _prepare_sleep(directory)
    return entry


def _prepare_sleep(directory: Path) -> None:
    """Put the clock-following ``sleep`` (bound over ``/usr/bin/sleep``) and the real one beside it in ``directory``.

    Nothing is put there when the host has no ``sleep`` binary: the sandbox then keeps whatever it has.
    """
    real = shutil.which("sleep", path="/usr/bin:/bin")
    if real is None:
        return
    shutil.copyfile(real, directory / SLEEP_REAL)
    shutil.copyfile(GUEST_DIR / "sleep.sh", directory / SLEEP_SHIM)
    for name in (SLEEP_REAL, SLEEP_SHIM):
        os.chmod(directory / name, 0o755)


def find_bwrap() -> str | None:
    """Return the bubblewrap binary, or None."""
    return shutil.which("bwrap")


@dataclass(frozen=True)
class Layout:
    """Where one sandbox's files live on the host."""

    base: Path
    uid: int
    gid: int
    guest: Path = GUEST_DIR
    entry: str = "init.py"

    @property
    def root(self) -> Path:
        """Return the host directory that is the sandbox's ``/``."""
        return self.base / "root"

    @property
    def etc(self) -> Path:
        """Return the directory of the generated ``/etc`` files."""
        return self.base / "etc"

    @property
    def log(self) -> Path:
        """Return the init's log file."""
        return self.base / "init.log"

    def create(self, hostname: str, disk_bytes: int | None = None) -> bool:
        """Make the directories and generated files (the base must not exist yet); tell whether the root has
        its own tmpfs of ``disk_bytes`` (False: none asked, or mounting failed and the root is a plain folder)."""
        self.base.mkdir(parents=True, exist_ok=False)
        self.etc.mkdir()
        self.root.mkdir(mode=0o755)
        sized = False
        if disk_bytes is not None:
            try:
                mount_tmpfs(str(self.root), disk_bytes, uid=self.uid, gid=self.gid)
                sized = True
            except KernelError:
                pass
        os.chown(self.root, self.uid, self.gid)
        for guest, mode in WRITABLE_DIRS.items():
            path = self.root / guest.lstrip("/")
            path.mkdir(mode=mode)
            os.chmod(path, mode)
            os.chown(path, self.uid, self.gid)
        for guest in (*SYSTEM_DIRS, *HIDDEN_DIRS, GUEST_MOUNT):
            host = Path(guest)
            target = self.root / guest.lstrip("/")
            if host.is_symlink():
                target.symlink_to(os.readlink(host))
                os.lchown(target, self.uid, self.gid)
            elif guest == GUEST_MOUNT or host.is_dir():
                target.mkdir(exist_ok=True)
                os.chown(target, self.uid, self.gid)
        for name, text in self.etc_files(hostname).items():
            (self.etc / name).write_text(text)
            os.chmod(self.etc / name, 0o644)
        return sized

    def resize(self, disk_bytes: int) -> bool:
        """Set the size of the root's tmpfs; tell whether it was done (False: no tmpfs, or it holds more)."""
        try:
            resize_tmpfs(str(self.root), disk_bytes)
        except KernelError:
            return False
        return True

    def release(self) -> None:
        """Unmount the root's tmpfs, if it has one (lazily: what still holds it lets go later).

        The root is the only mount a sandbox makes in the host's mount namespace, so it is unmounted by its
        path, without reading the host's mount table (which grows with the live sandboxes); a root that is
        a plain folder answers EINVAL and is left as it is.
        """
        with contextlib.suppress(KernelError):
            unmount(str(self.root))

    @staticmethod
    def etc_files(hostname: str) -> dict[str, str]:
        """Return the generated ``/etc`` files of a sandbox called ``hostname``."""
        return {
            "hosts": f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t{hostname}\n",
            "hostname": f"{hostname}\n",
            "resolv.conf": f"nameserver {RESOLVER}\noptions attempts:2 timeout:2\n",
        }

    def mounts(self) -> list[Mount]:
        """Return the sandbox's mount table as the files API sees it."""
        table = [Mount("/", self.root, writable=True)]
        for guest in SYSTEM_DIRS:
            if Path(guest).is_dir() and not Path(guest).is_symlink():
                table.append(Mount(guest, Path(guest), writable=False, system=True))
        table += [Mount(f"/etc/{name}", self.etc / name, writable=False, is_file=True) for name in ETC_FILES]
        table += [Mount(guest, self.root / guest.lstrip("/"), writable=False, visible=False) for guest in HIDDEN_DIRS]
        table.append(Mount(GUEST_MOUNT, self.guest, writable=False, system=True))
        return table


def release_mounts(directory: Path) -> list[str]:
    """Lazily unmount every mount at or below ``directory`` (deepest first); return the mount points."""
    prefix = str(directory).rstrip("/")
    points: list[str] = []
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) > 4:
                    point = fields[4].replace("\\040", " ")
                    if point == prefix or point.startswith(prefix + "/"):
                        points.append(point)
    except OSError:
        return []
    for point in sorted(points, key=len, reverse=True):  # a point mounted twice is unmounted twice
        try:
            unmount(point)
        except KernelError:
            continue
    return points


def _etc_targets() -> list[str]:
    """Return the directories bubblewrap must make so that binds over symlinked /etc files work."""
    dirs: list[str] = []
    for name in ETC_FILES:
        host = Path("/etc") / name
        if host.is_symlink():
            target = os.path.normpath(os.path.join("/etc", os.readlink(host)))
            if target.startswith("/run/"):
                dirs.append(os.path.dirname(target))
    return dirs


def bwrap_command(
    bwrap: str,
    layout: Layout,
    *,
    python: str,
    userns_fd: int,
    ctl_fd: int,
    info_fd: int,
    hostname: str,
) -> list[str]:
    """Return the bubblewrap argv that starts the sandbox's init."""
    argv = [
        bwrap,
        "--userns", str(userns_fd),
        "--uid", "0",
        "--gid", "0",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname", hostname,
        "--as-pid-1",
        "--die-with-parent",
        "--new-session",
        "--info-fd", str(info_fd),
        "--bind", str(layout.root), "/",
    ]  # fmt: skip
    for guest in SYSTEM_DIRS:
        host = Path(guest)
        if host.is_dir() and not host.is_symlink():
            argv += ["--ro-bind", guest, guest]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/run"]
    for directory in _etc_targets():
        argv += ["--dir", directory]
    for name in ETC_FILES:
        argv += ["--ro-bind", str(layout.etc / name), f"/etc/{name}"]
    argv += ["--ro-bind", str(layout.guest), GUEST_MOUNT]
    if (layout.guest / SLEEP_SHIM).is_file():
        for target in SLEEP_TARGETS:
            if Path(target).is_file() and not Path(os.path.dirname(target)).is_symlink():
                argv += ["--ro-bind", str(layout.guest / SLEEP_SHIM), target]
    for cap in CAPABILITIES:
        argv += ["--cap-add", cap]
    argv += ["--chdir", "/", "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin"]
    argv += ["--", python, "-S", "-E", "-s", "-B", f"{GUEST_MOUNT}/{layout.entry}", str(ctl_fd)]
    return argv
