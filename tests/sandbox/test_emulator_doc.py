import re
from pathlib import Path

from mockserver.sandbox import CommandEmulator, FileSystem

DOC = Path(__file__).resolve().parents[2] / "docs" / "emulator.md"


def test_the_limits_page_lists_every_command_the_emulator_runs() -> None:
    listed = set(re.findall(r"`([^`\s]+)`", DOC.read_text(encoding="utf-8")))
    missing = sorted(CommandEmulator(FileSystem()).commands - listed)
    assert not missing, f"docs/emulator.md does not list {missing}"
