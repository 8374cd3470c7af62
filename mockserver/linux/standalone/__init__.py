"""Stand-alone programs of the runtime, run on the host's ``python3`` with the standard library only.

* ``init.py`` is PID 1 of every sandbox; this directory is mounted read-only into each sandbox at
  :data:`GUEST_MOUNT`, where the host's own ``python3`` (mounted read-only too) runs it.
* ``launcher.py`` runs on the host, once per runtime: a small process that forks bubblewrap for each
  sandbox, so that starting a sandbox never forks the (large) process the runtime lives in.
* ``wire.py`` is the message framing both speak with the runtime.

They never import the rest of sandproof.
"""

from pathlib import Path

#: This directory; mounted into each sandbox at :data:`GUEST_MOUNT`.
GUEST_DIR = Path(__file__).resolve().parent
GUEST_MOUNT = "/.sandproof"

__all__ = ["GUEST_DIR", "GUEST_MOUNT"]
