"""The ``tl sbx`` CLI's network and port flags as pure functions from arguments to request bodies.

Source: ``docs/sources/reference/tensorlake-wire.md`` §9 (the CLI at 0.5.113) and the networking docs. The functions take
the arguments after the subcommand (``tl sbx create <argv>``, ``tl sbx update ID <argv>``) and return the JSON
body the CLI sends, or raise ``PolicyError`` where the CLI refuses to send anything.

* ``create``: ``-N/--no-internet`` conflicts with ``-A/--network-allow`` and ``-D/--network-deny`` (both
  repeatable). With any of them the body carries ``network: {allow_internet_access: !no_internet,
  allow_out: A, deny_out: D}``, all three keys present; ``-A`` keeps ``allow_internet_access=true``.
  ``-x/--expose PORT`` (repeatable) sets ``exposed_ports`` in the order given and forces
  ``allow_unauthenticated_access=true``. A fresh create always carries the default ``resources``.
* ``update``: at least one of ``-N``, ``-A``, ``-D``, ``--clear-network``; ``--clear-network`` conflicts with
  the other three and sends ``{"network": null}``; otherwise the whole policy is replaced.
* ``port expose`` / ``port rm``: computed from the sandbox's current ``SandboxInfo``. ``expose`` always
  sets ``allow_unauthenticated_access=true``; ``rm`` sets it to whether any port remains. Both return None
  when nothing would change (the CLI then skips the PATCH). Port 9501 and ports outside 1-65535 are rejected.

Entries are passed through verbatim: the CLI does not validate them, the server does.
Options accept ``--flag value``, ``--flag=value``, ``-A value``, ``-Avalue`` and clustered short flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.errors import PolicyError

__all__ = [
    "MANAGEMENT_PORT",
    "build_network_config",
    "create_body",
    "parse_user_port",
    "port_expose_body",
    "port_rm_body",
    "update_body",
]

MANAGEMENT_PORT = 9501
DEFAULT_RESOURCES: dict[str, Any] = {"cpus": 1.0, "memory_mb": 1024}

UNKNOWN_FLAG = "unknown_flag"
MISSING_VALUE = "missing_value"
DUPLICATE_FLAG = "duplicate_flag"
UNEXPECTED_ARGUMENT = "unexpected_argument"
CONFLICTING_FLAGS = "conflicting_flags"
MISSING_NETWORK_SETTING = "missing_network_setting"
MISSING_PORTS = "missing_ports"
INVALID_PORT = "invalid_port"
PORT_OUT_OF_RANGE = "port_out_of_range"
RESERVED_PORT = "reserved_port"

CLI_CODES: frozenset[str] = frozenset(
    {
        UNKNOWN_FLAG,
        MISSING_VALUE,
        DUPLICATE_FLAG,
        UNEXPECTED_ARGUMENT,
        CONFLICTING_FLAGS,
        MISSING_NETWORK_SETTING,
        MISSING_PORTS,
        INVALID_PORT,
        PORT_OUT_OF_RANGE,
        RESERVED_PORT,
    }
)


@dataclass(frozen=True)
class _Option:
    dest: str
    short: str | None
    long: str
    takes_value: bool


_NO_INTERNET = _Option("no_internet", "N", "no-internet", False)
_ALLOW = _Option("network_allow", "A", "network-allow", True)
_DENY = _Option("network_deny", "D", "network-deny", True)
_EXPOSE = _Option("ports", "x", "expose", True)
_UNAUTH = _Option("allow_unauthenticated_access", None, "allow-unauthenticated-access", False)
_CLEAR = _Option("clear_network", None, "clear-network", False)

_CREATE_OPTIONS = (_NO_INTERNET, _ALLOW, _DENY, _EXPOSE, _UNAUTH)
_UPDATE_OPTIONS = (_NO_INTERNET, _ALLOW, _DENY, _CLEAR)


@dataclass
class _Parsed:
    flags: set[str] = field(default_factory=set)
    values: dict[str, list[str]] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)

    def add(self, option: _Option, value: str | None, spelled: str) -> None:
        if value is None:
            if option.dest in self.flags:
                raise PolicyError(DUPLICATE_FLAG, f"the argument '{spelled}' cannot be used multiple times")
            self.flags.add(option.dest)
        else:
            self.values.setdefault(option.dest, []).append(value)

    def get(self, dest: str) -> list[str]:
        return self.values.get(dest, [])


def _parse(argv: Sequence[str], options: Sequence[_Option]) -> _Parsed:
    longs = {option.long: option for option in options}
    shorts = {option.short: option for option in options if option.short}
    parsed = _Parsed()
    items = list(argv)
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if arg.startswith("--") and len(arg) > 2:
            name, eq, inline = arg[2:].partition("=")
            option = longs.get(name)
            if option is None:
                raise PolicyError(UNKNOWN_FLAG, f"unexpected argument '--{name}'")
            if not option.takes_value:
                if eq:
                    raise PolicyError(UNEXPECTED_ARGUMENT, f"'--{name}' takes no value")
                parsed.add(option, None, f"--{name}")
                continue
            if not eq:
                if i >= len(items) or items[i].startswith("-"):
                    raise PolicyError(MISSING_VALUE, f"'--{name}' needs a value")
                inline = items[i]
                i += 1
            parsed.add(option, inline, f"--{name}")
        elif arg.startswith("-") and len(arg) > 1:
            j = 1
            while j < len(arg):
                option = shorts.get(arg[j])
                if option is None:
                    raise PolicyError(UNKNOWN_FLAG, f"unexpected argument '-{arg[j]}'")
                j += 1
                if not option.takes_value:
                    parsed.add(option, None, f"-{option.short}")
                    continue
                value = arg[j:].removeprefix("=")
                if not value:
                    if i >= len(items) or items[i].startswith("-"):
                        raise PolicyError(MISSING_VALUE, f"'-{option.short}' needs a value")
                    value = items[i]
                    i += 1
                parsed.add(option, value, f"-{option.short}")
                break
        else:
            parsed.positionals.append(arg)
    return parsed


def build_network_config(
    no_internet: bool, network_allow: Sequence[str], network_deny: Sequence[str]
) -> dict[str, Any] | None:
    """Return the ``network`` object for the given flags, None when no network flag was given."""
    if no_internet and (network_allow or network_deny):
        raise PolicyError(CONFLICTING_FLAGS, "--no-internet cannot be combined with allow or deny rules")
    if not no_internet and not network_allow and not network_deny:
        return None
    return {
        "allow_internet_access": not no_internet,
        "allow_out": list(network_allow),
        "deny_out": list(network_deny),
    }


def parse_user_port(value: str | int) -> int:
    """Return ``value`` as a user port; raise PolicyError for 9501, non-integers or ports outside 1-65535."""
    if isinstance(value, bool):
        raise PolicyError(INVALID_PORT, f"invalid port '{value}'")
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit()) or int(value) > 65535:
            raise PolicyError(INVALID_PORT, f"invalid port '{value}'")
        value = int(value)
    if not 1 <= value <= 65535:
        raise PolicyError(PORT_OUT_OF_RANGE, f"port {value}: must be between 1 and 65535")
    if value == MANAGEMENT_PORT:
        raise PolicyError(RESERVED_PORT, "port 9501 is reserved for sandbox management")
    return value


def create_body(argv: Sequence[str]) -> dict[str, Any]:
    """Return the ``POST /sandboxes`` body for ``tl sbx create [NAME] <network and port flags>``."""
    parsed = _parse(argv, _CREATE_OPTIONS)
    if len(parsed.positionals) > 1:
        raise PolicyError(UNEXPECTED_ARGUMENT, f"unexpected argument '{parsed.positionals[1]}'")
    ports = [parse_user_port(port) for port in parsed.get("ports")]
    network = build_network_config(
        "no_internet" in parsed.flags, parsed.get("network_allow"), parsed.get("network_deny")
    )
    body: dict[str, Any] = {"resources": dict(DEFAULT_RESOURCES)}
    if parsed.positionals:
        body["name"] = parsed.positionals[0]
    if ports:
        body["exposed_ports"] = ports
    if ports or "allow_unauthenticated_access" in parsed.flags:
        body["allow_unauthenticated_access"] = True
    if network is not None:
        body["network"] = network
    return body


def update_body(argv: Sequence[str]) -> dict[str, Any]:
    """Return the ``PATCH /sandboxes/{id}`` body for ``tl sbx update ID <argv>`` (argv without the ID)."""
    parsed = _parse(argv, _UPDATE_OPTIONS)
    if parsed.positionals:
        raise PolicyError(UNEXPECTED_ARGUMENT, f"unexpected argument '{parsed.positionals[0]}'")
    no_internet = "no_internet" in parsed.flags
    allow, deny = parsed.get("network_allow"), parsed.get("network_deny")
    if "clear_network" in parsed.flags:
        if no_internet or allow or deny:
            raise PolicyError(CONFLICTING_FLAGS, "--clear-network cannot be combined with replacement network settings")
        return {"network": None}
    network = build_network_config(no_internet, allow, deny)
    if network is None:
        raise PolicyError(
            MISSING_NETWORK_SETTING,
            "provide --no-internet, --network-allow, --network-deny or --clear-network",
        )
    return {"network": network}


def _current_ports(current: Mapping[str, Any]) -> tuple[bool, list[int]]:
    unauth = current.get("allow_unauthenticated_access", current.get("allow_unauthenticated_proxy_access"))
    raw = current.get("exposed_ports", current.get("exposedPorts"))
    ports = {
        port
        for port in (raw if isinstance(raw, list) else [])
        if isinstance(port, int) and not isinstance(port, bool) and 0 <= port <= 65535
    }
    return unauth is True, sorted(ports)


def _requested(ports: Sequence[str | int]) -> set[int]:
    if not ports:
        raise PolicyError(MISSING_PORTS, "at least one port is required")
    return {parse_user_port(port) for port in ports}


def port_expose_body(current: Mapping[str, Any], ports: Sequence[str | int]) -> dict[str, Any] | None:
    """Return the PATCH body of ``tl sbx port expose ID PORTS``, None when nothing would change."""
    requested = _requested(ports)
    unauth, exposed = _current_ports(current)
    desired = sorted(set(exposed) | requested)
    if desired == exposed and unauth:
        return None
    return {"allow_unauthenticated_access": True, "exposed_ports": desired}


def port_rm_body(current: Mapping[str, Any], ports: Sequence[str | int]) -> dict[str, Any] | None:
    """Return the PATCH body of ``tl sbx port rm ID PORTS``, None when nothing would change."""
    requested = _requested(ports)
    unauth, exposed = _current_ports(current)
    desired = [port for port in exposed if port not in requested]
    if desired == exposed and unauth == bool(desired):
        return None
    return {"allow_unauthenticated_access": bool(desired), "exposed_ports": desired}
