"""Scenario documents: one mock's starting state as a file, read at start and exported by ``GET /_mock/scenario``.

A scenario document is a JSON (or TOML) object::

    {"sandproof_scenario": 1,
     "tensorlake":  {"api_keys": [...], "clock": {...}, "dns": {...}, "snapshot": {...},
                     "sandboxes": [...], "faults": [...]},
     "opensandbox": {...}}

Every section of a provider is optional:

* ``api_keys``: the keys the mock accepts, each its own tenant (absent: any non-empty key);
* ``snapshot``: an exact ``/_mock/snapshot`` (sandboxes with their files, clock, DNS), restored first;
* ``clock``: ``{"mode": "wall" | "manual" | "auto", "now": EPOCH_SECONDS}`` (``now`` is ignored under ``wall``);
* ``dns``: ``{"entries": {"name": ["address", ...]}, "default": "synthetic" | "nxdomain"}``;
* ``sandboxes``: sandboxes created through the provider's own API at start, each
  ``{"create": {...the provider's create body...}, "api_key": "...", "files": {"/path": "text"},
  "state": "paused" | "suspended"}`` (only ``create`` is required);
* ``faults``: armed last, so they never hit the seeding requests: ``{"fault": "<catalogue name>",
  "params": {...}}`` or ``{"rule": {...a /_mock/faults rule...}}``;
* ``server_config`` (OpenSandbox only): the real server's own TOML configuration file the mock is built from
  (``sandproof serve --opensandbox-config``), a path relative to the scenario file.

This module parses and checks a document (:func:`parse_scenario`, a :class:`ScenarioError` names the field at
fault), applies what needs no HTTP to a mock (:func:`apply_state`, :func:`arm_faults`) and writes one
(:func:`export_scenario`). Creating the seed sandboxes through the provider API is :mod:`mockserver.scenario`'s.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mockserver.core.clock import VirtualClock
from mockserver.core.dns import DnsTable
from mockserver.core.errors import ApiError
from mockserver.core.faults import FaultError, FaultRule, FaultSet

from .catalogue import NamedFault, arm

__all__ = [
    "FORMAT_KEY",
    "FORMAT_VERSION",
    "PROVIDER_SECTIONS",
    "FaultEntry",
    "ProviderScenario",
    "Scenario",
    "ScenarioError",
    "SeedSandbox",
    "apply_state",
    "arm_faults",
    "export_scenario",
    "parse_scenario",
    "read_scenario",
]

FORMAT_KEY = "sandproof_scenario"
FORMAT_VERSION = 1
PROVIDERS = ("tensorlake", "opensandbox")
PROVIDER_SECTIONS = ("api_keys", "snapshot", "clock", "dns", "sandboxes", "faults", "server_config")
SEED_STATES: dict[str, tuple[str, ...]] = {"tensorlake": ("suspended",), "opensandbox": ("paused",)}
#: The fault-rule fields an export leaves out: the set's own bookkeeping, not what the rule does.
_RULE_BOOKKEEPING = ("id", "fired", "last_fired_at", "ended")


class ScenarioError(ValueError):
    """A scenario document that cannot be used; the message names the source and the field at fault."""

    def __init__(self, source: str, where: str, message: str) -> None:
        super().__init__(f"scenario {source}: {where}: {message}" if where else f"scenario {source}: {message}")
        self.source = source
        self.where = where


@dataclass(frozen=True)
class SeedSandbox:
    """A sandbox created through the provider's API at start: its create body, key, files and final state."""

    create: dict[str, Any]
    api_key: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    state: str | None = None


@dataclass(frozen=True)
class FaultEntry:
    """A fault armed at start: a catalogue fault by name with its parameters, or a plain rule."""

    fault: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    rule: dict[str, Any] | None = None


@dataclass(frozen=True)
class ProviderScenario:
    """One provider's part of a scenario (every part optional)."""

    api_keys: tuple[str, ...] | None = None
    snapshot: dict[str, Any] | None = None
    clock: dict[str, Any] | None = None
    dns: dict[str, Any] | None = None
    sandboxes: tuple[SeedSandbox, ...] = ()
    faults: tuple[FaultEntry, ...] = ()
    server_config: str | None = None


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario: where it came from and each provider's part."""

    source: str
    providers: dict[str, ProviderScenario]


class _Checker:
    """Check one document's values, naming the field at fault."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, message: str) -> ScenarioError:
        return ScenarioError(self.source, where, message)

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be an object, not {type(value).__name__}")
        return value

    def only(self, value: dict[str, Any], where: str, allowed: tuple[str, ...]) -> None:
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise self.fail(
                f"{where}.{unknown[0]}" if where else unknown[0], f"unknown field (known: {', '.join(allowed)})"
            )

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, "must be a non-empty string")
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"must be a list, not {type(value).__name__}")
        return value


def read_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file: ``.toml`` as TOML, anything else as JSON."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ScenarioError(source, "", f"cannot read it: {exc.strerror or exc}") from exc
    try:
        data = tomllib.loads(raw.decode()) if source.endswith(".toml") else json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        kind = "TOML" if source.endswith(".toml") else "JSON"
        raise ScenarioError(source, "", f"not valid {kind}: {exc}") from exc
    return parse_scenario(data, source)


def parse_scenario(data: Any, source: str = "<document>") -> Scenario:
    """Check a scenario document and return it parsed; :class:`ScenarioError` names the first field at fault."""
    check = _Checker(source)
    top = check.obj(data, "")
    check.only(top, "", (FORMAT_KEY, *PROVIDERS))
    if top.get(FORMAT_KEY) != FORMAT_VERSION:
        raise check.fail(FORMAT_KEY, f"must be {FORMAT_VERSION} (the scenario format version)")
    parts = {name: _provider(check, name, check.obj(top[name], name)) for name in PROVIDERS if name in top}
    return Scenario(source, parts)


def _provider(check: _Checker, name: str, part: dict[str, Any]) -> ProviderScenario:
    check.only(part, name, PROVIDER_SECTIONS)
    keys = None
    if "api_keys" in part:
        keys = tuple(
            check.text(k, f"{name}.api_keys[{i}]")
            for i, k in enumerate(check.items(part["api_keys"], f"{name}.api_keys"))
        )
    snapshot = check.obj(part["snapshot"], f"{name}.snapshot") if "snapshot" in part else None
    if snapshot is not None and snapshot.get("provider") != name:
        raise check.fail(f"{name}.snapshot.provider", f"must be {name!r} (a {name} /_mock/snapshot)")
    clock = _clock(check, name, part["clock"]) if "clock" in part else None
    dns = _dns(check, name, part["dns"]) if "dns" in part else None
    seeds = tuple(
        _seed(check, name, f"{name}.sandboxes[{i}]", s)
        for i, s in enumerate(check.items(part.get("sandboxes", []), f"{name}.sandboxes"))
    )
    faults = tuple(
        _fault(check, f"{name}.faults[{i}]", f)
        for i, f in enumerate(check.items(part.get("faults", []), f"{name}.faults"))
    )
    return ProviderScenario(keys, snapshot, clock, dns, seeds, faults, _server_config(check, name, part))


def _server_config(check: _Checker, name: str, part: dict[str, Any]) -> str | None:
    """Return the OpenSandbox server configuration file a part names, relative to the scenario file."""
    if "server_config" not in part:
        return None
    where = f"{name}.server_config"
    if name != "opensandbox":
        raise check.fail(where, "only the opensandbox part takes a server configuration file")
    value = Path(check.text(part["server_config"], where))
    if value.is_absolute() or check.source.startswith("<"):
        return str(value)
    return str(Path(check.source).parent / value)


def _clock(check: _Checker, name: str, value: Any) -> dict[str, Any]:
    where = f"{name}.clock"
    clock = check.obj(value, where)
    check.only(clock, where, ("mode", "now"))
    if clock.get("mode", "wall") not in ("wall", "manual", "auto"):
        raise check.fail(f"{where}.mode", "must be wall, manual or auto")
    now = clock.get("now")
    if now is not None and (isinstance(now, bool) or not isinstance(now, int | float) or now != now or now < 0):
        raise check.fail(f"{where}.now", "must be epoch seconds (a number >= 0)")
    return clock


def _dns(check: _Checker, name: str, value: Any) -> dict[str, Any]:
    where = f"{name}.dns"
    dns = check.obj(value, where)
    check.only(dns, where, ("entries", "default"))
    if dns.get("default", "synthetic") not in ("synthetic", "nxdomain"):
        raise check.fail(f"{where}.default", "must be synthetic or nxdomain")
    for host, addresses in check.obj(dns.get("entries", {}), f"{where}.entries").items():
        listed = check.items(addresses, f"{where}.entries.{host}")
        for i, address in enumerate(listed):
            check.text(address, f"{where}.entries.{host}[{i}]")
    return dns


def _seed(check: _Checker, name: str, where: str, value: Any) -> SeedSandbox:
    seed = check.obj(value, where)
    check.only(seed, where, ("create", "api_key", "files", "state"))
    if "create" not in seed:
        raise check.fail(f"{where}.create", "is required (the provider's create body)")
    create = check.obj(seed["create"], f"{where}.create")
    key = check.text(seed["api_key"], f"{where}.api_key") if "api_key" in seed else None
    files = check.obj(seed.get("files", {}), f"{where}.files")
    for path, content in files.items():
        if not path.startswith("/"):
            raise check.fail(f"{where}.files.{path}", "a file path must be absolute")
        if not isinstance(content, str):
            raise check.fail(f"{where}.files.{path}", "the content must be a string")
    state = seed.get("state")
    if state is not None and state not in SEED_STATES[name]:
        raise check.fail(f"{where}.state", f"must be one of {', '.join(SEED_STATES[name])} (or absent: running)")
    return SeedSandbox(create, key, dict(files), state)


def _fault(check: _Checker, where: str, value: Any) -> FaultEntry:
    entry = check.obj(value, where)
    check.only(entry, where, ("fault", "params", "rule"))
    if ("fault" in entry) == ("rule" in entry):
        raise check.fail(where, "give either fault (a catalogue name, with params) or rule (a fault rule)")
    if "rule" in entry:
        rule = check.obj(entry["rule"], f"{where}.rule")
        try:
            FaultRule.from_json(rule)
        except FaultError as exc:
            raise check.fail(f"{where}.rule", str(exc)) from exc
        return FaultEntry(rule=rule)
    return FaultEntry(
        check.text(entry["fault"], f"{where}.fault"), check.obj(entry.get("params", {}), f"{where}.params")
    )


class ScenarioTarget(Protocol):
    """What a scenario is applied to and exported from: a mock's clock, DNS, faults and state verbs."""

    provider: str
    clock: VirtualClock
    dns: DnsTable
    faults: FaultSet

    def snapshot(self) -> dict[str, Any]:
        """Return the whole state as JSON."""
        ...

    def restore(self, data: dict[str, Any]) -> None:
        """Replace the whole state with a snapshot."""
        ...


def apply_state(mock: ScenarioTarget, part: ProviderScenario, source: str) -> None:
    """Restore the snapshot, then set the clock and DNS; nothing of this part is applied when one step fails."""
    name = mock.provider
    before = mock.snapshot()
    try:
        if part.snapshot is not None:
            _step(source, f"{name}.snapshot", lambda: mock.restore(_wall_clock_kept(part.snapshot, mock.clock)))
        if part.clock is not None:
            clock = part.clock
            mode = clock.get("mode", mock.clock.mode)
            now = clock.get("now") if mode != "wall" and clock.get("now") is not None else mock.clock.now()
            _step(source, f"{name}.clock", lambda: mock.clock.load({"mode": mode, "now": now}))
        if part.dns is not None:
            dns = part.dns
            _step(source, f"{name}.dns", lambda: mock.dns.load({"entries": {}, **dns}))
    except ScenarioError:
        mock.restore(before)
        raise


def _wall_clock_kept(snapshot: dict[str, Any], clock: VirtualClock) -> dict[str, Any]:
    """Return ``snapshot`` with a ``wall`` clock set to now: a wall clock shows the real time on every start."""
    saved = snapshot.get("clock")
    if isinstance(saved, dict) and saved.get("mode", "wall") == "wall":
        return {**snapshot, "clock": {"mode": "wall", "now": clock.now()}}
    return snapshot


def _step(source: str, where: str, action: Any) -> None:
    try:
        action()
    except (ValueError, KeyError, TypeError) as exc:
        raise ScenarioError(source, where, str(exc) or type(exc).__name__) from exc


def arm_faults(mock: ScenarioTarget, part: ProviderScenario, catalogue: Mapping[str, NamedFault], source: str) -> None:
    """Arm the part's faults in order (catalogue faults by name, rules as given); a refused one arms none."""
    name = mock.provider
    armed: list[int] = []
    try:
        for i, entry in enumerate(part.faults):
            where = f"{name}.faults[{i}]"
            if entry.rule is not None:
                armed.append(mock.faults.add(FaultRule.from_json(entry.rule)).id)
                continue
            assert entry.fault is not None
            try:
                result = arm(catalogue, entry.fault, entry.params)
            except ApiError as exc:
                raise ScenarioError(source, where, f"{exc.code}: {exc.message}") from exc
            armed.extend(rule["id"] for rule in result["rules"])
    except ScenarioError:
        for rule_id in armed:
            mock.faults.remove(rule_id)
        raise


def export_scenario(mock: ScenarioTarget, api_keys: list[str] | None) -> dict[str, Any]:
    """Return a scenario document that starts a mock where ``mock`` is now: keys, state, clock, DNS, active faults."""
    part: dict[str, Any] = {}
    if api_keys is not None:
        part["api_keys"] = sorted(api_keys)
    part["snapshot"] = mock.snapshot()
    part["clock"] = {"mode": mock.clock.mode, "now": mock.clock.now()}
    rules = [{k: v for k, v in rule.to_json().items() if k not in _RULE_BOOKKEEPING} for rule in mock.faults.rules()]
    if rules:
        part["faults"] = [{"rule": rule} for rule in rules]
    return {FORMAT_KEY: FORMAT_VERSION, mock.provider: part}
