"""The requirements check names everything missing in one message, and passes where the runtime runs."""

from __future__ import annotations

import pytest

from mockserver.linux import requirements
from mockserver.linux.requirements import Requirements, RuntimeUnavailable

from .conftest import REPORT, needs_runtime

check = requirements.check_requirements.__wrapped__


def test_everything_missing_is_named_in_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requirements.shutil, "which", lambda _name: None)
    monkeypatch.setattr(requirements, "libnftables_available", lambda: False)
    monkeypatch.setattr(requirements, "guest_python", lambda: None)
    monkeypatch.setattr(requirements.os, "geteuid", lambda: 1000)
    report = check()
    assert not report.ok
    message = report.message()
    for needed in ("root", "bubblewrap (bwrap)", "iproute2 (ip)", "nftables", "python3 under /usr"):
        assert needed in message
    assert message.count("\n") == 0
    assert "apt-get install -y bubblewrap nftables iproute2" in message


def test_the_install_hint_only_when_a_tool_is_missing() -> None:
    assert Requirements(("root (euid 0)",)).message() == "linux runtime unavailable: missing root (euid 0)"
    assert "apt-get" in Requirements(("iproute2 (ip)",)).message()


def test_require_raises_with_the_message(monkeypatch: pytest.MonkeyPatch) -> None:
    report = Requirements(("bubblewrap (bwrap)",))
    monkeypatch.setattr(requirements, "check_requirements", lambda: report)
    with pytest.raises(RuntimeUnavailable, match=r"missing bubblewrap \(bwrap\)"):
        requirements.require()


def test_nft_binary_without_the_library_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requirements, "libnftables_available", lambda: False)
    monkeypatch.setattr(requirements.os, "geteuid", lambda: 1000)
    real_which = requirements.shutil.which
    monkeypatch.setattr(
        requirements.shutil, "which", lambda name: "/usr/sbin/nft" if name == "nft" else real_which(name)
    )
    report = check()
    assert not any("nftables" in m for m in report.missing)
    assert any("libnftables" in n for n in report.notes)


def test_main_exits_1_when_missing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(requirements, "check_requirements", lambda: Requirements(("iproute2 (ip)",), ("a note",)))
    assert requirements.main() == 1
    out = capsys.readouterr().out
    assert "missing iproute2 (ip)" in out and "note: a note" in out


@needs_runtime
def test_this_machine_can_run_the_runtime() -> None:
    assert REPORT.ok, REPORT.message()
    assert requirements.main() == 0


def test_the_requirements_module_runs_without_a_runpy_warning() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "mockserver.linux.requirements"],
        capture_output=True,
        text=True,
    )
    assert "RuntimeWarning" not in out.stderr, out.stderr
    assert out.stdout.strip(), "it prints whether the runtime is available"
