"""Run every benchmark under ``bench/`` in turn and print their figures (``--smoke`` for a quick pass)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

BENCHES = ("policy.py", "tensorlake.py", "opensandbox.py", "recording.py", "linux_runtime.py")


def main(argv: Sequence[str] | None = None) -> int:
    """Run each benchmark script in its own process; return non-zero if one failed."""
    args = list(sys.argv[1:] if argv is None else argv)
    here = Path(__file__).resolve().parent
    failed: list[str] = []
    for name in BENCHES:
        script = here / name
        if not script.exists():
            print(f"== {name}: missing, skipped", flush=True)
            continue
        print(f"== {name} {' '.join(args)}", flush=True)
        started = time.monotonic()
        code = subprocess.call([sys.executable, str(script), *args], cwd=here.parent)
        print(f"== {name}: exit {code} in {time.monotonic() - started:.1f} s", flush=True)
        if code != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
