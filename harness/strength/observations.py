"""Where an ``observed`` contract was observed: the real-server run, a capture in the repository, or a published source.

An observed contract earns its tag by naming at least one :class:`Observation`:

* :data:`REAL_RUN`: the real opensandbox-server 1.1.1 answers so in ``make contracts-real``, where the whole
  OpenSandbox suite runs against it (``harness/differential``; its sandboxes' execd is sandproof's own, so this
  observes the lifecycle server, its proxy and its endpoints, not execd). Only OpenSandbox contracts can cite it.
* :func:`capture`: verbatim traffic kept in the repository (``docs/sources/captures/``, a cassette or a test
  fixture), with a quote that must appear in it.
* :func:`published`: the source of a package as published on PyPI (the real server, an SDK), with the file and
  a quote of the rule that must appear in it.

:func:`problems` checks every quote against the repository and, where the package is installed here (the real
server in ``.venv-oss``, the SDKs in the project's venv), against the package; a test runs it over every
registered contract.
"""

from __future__ import annotations

import importlib.util
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

__all__ = ["REAL_RUN", "ROOT", "Observation", "capture", "problems", "published", "published_text"]

ROOT = Path(__file__).resolve().parents[2]
ObservationKind = Literal["real-run", "capture", "published"]
#: Where a published package is installed here, when it is not importable from the running interpreter.
_OTHER_SITES = {"opensandbox-server": ROOT / ".venv-oss" / "lib" / "python3.11" / "site-packages"}


@dataclass(frozen=True)
class Observation:
    """One place a behaviour was observed: its kind, where (stage, repository path, ``dist==version:path``), a quote."""

    kind: ObservationKind
    where: str
    quote: str = ""

    def __post_init__(self) -> None:
        """Refuse an observation without a place, and a capture or source without a quote."""
        if not self.where.strip():
            raise ValueError("an observation names where it was made")
        if self.kind != "real-run" and not self.quote.strip():
            raise ValueError(f"a {self.kind} observation quotes what it shows: {self.where}")

    def render(self) -> str:
        """Return the observation as one citation."""
        if self.kind == "real-run":
            return self.where
        return f"{self.where}: “{' '.join(self.quote.split())}”"


#: The real opensandbox-server 1.1.1 in ``make contracts-real``.
REAL_RUN = Observation(
    "real-run", "make contracts-real (the real opensandbox-server 1.1.1 on the fake Docker engine answers so)"
)


def capture(path: str, quote: str) -> Observation:
    """Return an observation in verbatim traffic kept at ``path`` (relative to the repository) that holds ``quote``."""
    return Observation("capture", path, quote)


def published(dist: str, path: str, quote: str) -> Observation:
    """Return an observation in the published source of ``dist`` (``name==version``), file ``path``, quoting a rule."""
    if "==" not in dist:
        raise ValueError(f"name the published version: {dist!r}")
    return Observation("published", f"{dist}:{path}", quote)


def _collapse(text: str) -> str:
    return " ".join(text.split())


@cache
def published_text(dist: str, path: str) -> str | None:
    """Return the installed text of ``path`` in package ``dist`` (``name==version``), None where it is not installed
    here or another version is."""
    name, _, version = dist.partition("==")
    site = _OTHER_SITES.get(name)
    candidates = [site] if site is not None else []
    top = path.split("/", 1)[0]
    spec = importlib.util.find_spec(top) if site is None else None
    if spec is not None and spec.origin is not None:
        candidates.append(Path(spec.origin).parents[1])
    candidates.append(Path(sysconfig.get_paths()["purelib"]))
    for base in candidates:
        file = base / path
        installed = (base / f"{name.replace('-', '_')}-{version}.dist-info").is_dir()
        if file.is_file() and installed:
            return _collapse(file.read_text(encoding="utf-8", errors="replace"))
    return None


def problems(observation: Observation) -> list[str]:
    """Return what is wrong with one observation: a missing capture, a quote not found (empty: nothing)."""
    if observation.kind == "real-run":
        return []
    if observation.kind == "capture":
        file = ROOT / observation.where
        if not file.is_file():
            return [f"capture {observation.where} is not in the repository"]
        if _collapse(observation.quote) not in _collapse(file.read_text(encoding="utf-8", errors="replace")):
            return [f"capture {observation.where} does not hold {observation.quote!r}"]
        return []
    dist, _, path = observation.where.partition(":")
    text = published_text(dist, path)
    if text is not None and _collapse(observation.quote) not in text:
        return [f"{observation.where} does not hold {observation.quote!r}"]
    return []
