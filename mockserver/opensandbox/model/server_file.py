"""The real opensandbox-server's own TOML configuration file, read for the settings that change its answers.

:func:`load_server_file` reads the file the real 1.1.1 server starts from (``opensandbox-server --config FILE``,
its ``config.py``) and returns a :class:`ServerFile`: the runtime, the API key and the :class:`.config.ServerConfig`
settings below. Every other key is ignored, as the real server ignores keys it does not know (its pydantic models
keep the default ``extra="ignore"``); the keys read here are checked as the real server checks them, and a file
that breaks one fails with the file's path and the dotted field.

========================================  =====================================  ===============================
key                                       real default                           what it changes
========================================  =====================================  ===============================
``[runtime] type``, ``execd_image``       required (the server does not start)   ``docker`` / ``kubernetes`` profile
``[server] api_key``                      none (auth off, insecure mode)         the key clients must send
``[server] max_sandbox_timeout_seconds``  none (no bound; at least 60)           create ``timeout`` over it: 400
``[server] host``, ``eip``                ``0.0.0.0``, none                      the host endpoints name
``[egress] image``                        none                                   any ``networkPolicy``: 400
``[egress] mode``                         ``dns``                                the sidecar's enforcement
``[docker] network_mode``                 ``host``                               endpoint shape; host: policy 400
``[docker] port_range_min`` / ``_max``    40000 / 60000 (at least 100 apart)     bridge endpoints' host ports
``[storage] allowed_host_paths``          empty (no host volume)                 host volumes accepted
========================================  =====================================  ===============================

The mock serves the ``host`` and ``bridge`` network modes; a user-defined Docker network, ``[tenants]`` (the
multi-tenant key file) and a non-direct ``[ingress]`` under Docker are refused by name (the real server refuses
the last one too). ``[server] host = "0.0.0.0"`` (the default) names this machine's outward address in endpoints,
found as the real server finds it (the local address of a UDP socket pointed at 8.8.8.8; no packet is sent).
``ServerFile.local_host`` is where the sandboxes' host-mapped ports answer on this machine, as the real server's own
proxy reaches them: ``[server] host``, or 127.0.0.1 when that is left out or any address.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .config import DEFAULT_PORT_RANGE, ENFORCEMENT_MODES, NETWORK_MODES
from .profiles import ProfileName

__all__ = ["ServerFile", "ServerFileError", "load_server_file", "outward_ip", "parse_server_file"]

_RUNTIMES: tuple[ProfileName, ...] = ("docker", "kubernetes")
_ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


class ServerFileError(ValueError):
    """Raised for a configuration file the real server would not start from (or the mock cannot serve)."""


@dataclass(frozen=True)
class ServerFile:
    """What a real server's configuration file sets: the runtime, the API key and the served settings."""

    path: str
    profile: ProfileName
    api_key: str | None
    max_timeout: int | None
    egress_image: bool
    enforcement: str
    network_mode: str
    public_host: str
    proxy_base: str | None
    port_range: tuple[int, int]
    allowed_host_paths: tuple[str, ...]
    #: Where the sandboxes' host-mapped ports answer on this machine: ``[server] host``, 127.0.0.1 when that is
    #: left out or any address (the real server's ``_resolve_proxy_host``); the mock listens there in bridge mode.
    local_host: str = "127.0.0.1"

    def settings(self) -> dict[str, Any]:
        """Return the :class:`.config.ServerConfig` keyword arguments this file sets."""
        return {
            "max_timeout": self.max_timeout,
            "egress_image": self.egress_image,
            "enforcement": self.enforcement,
            "network_mode": self.network_mode,
            "public_host": self.public_host,
            "proxy_base": self.proxy_base,
            "port_range": self.port_range,
            "allowed_host_paths": self.allowed_host_paths,
        }


def outward_ip() -> str:
    """Return this machine's outward IPv4 address as the real server resolves ``0.0.0.0`` (127.0.0.1 if none)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("8.8.8.8", 80))  # a UDP connect only picks the route; nothing is sent
            address = str(sock.getsockname()[0])
            if address:
                return address
    except OSError:
        pass
    return "127.0.0.1"


class _Reader:
    """Read typed keys from the parsed file, failing with ``{path}: {field}: {problem}``."""

    def __init__(self, path: str, data: Mapping[str, Any]) -> None:
        self.path = path
        self.data = data

    def fail(self, name: str, problem: str) -> ServerFileError:
        return ServerFileError(f"{self.path}: {name}: {problem}")

    def table(self, name: str) -> Mapping[str, Any]:
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            raise self.fail(name, f"must be a table, got {type(value).__name__}")
        return cast(Mapping[str, Any], value)

    def string(self, section: str, key: str, default: str | None, *, min_length: int = 0) -> str | None:
        value = self.table(section).get(key, default)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(f"{section}.{key}", f"must be a string, got {type(value).__name__}")
        if len(value) < min_length:
            raise self.fail(f"{section}.{key}", f"must be at least {min_length} character(s) long")
        return value

    def integer(self, section: str, key: str, default: int | None, *, ge: int, le: int | None = None) -> int | None:
        value = self.table(section).get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{section}.{key}", f"must be an integer, got {type(value).__name__}")
        if value < ge or (le is not None and value > le):
            bound = f"at least {ge}" if le is None else f"between {ge} and {le}"
            raise self.fail(f"{section}.{key}", f"must be {bound}, got {value}")
        return value

    def strings(self, section: str, key: str) -> tuple[str, ...]:
        value = self.table(section).get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(f"{section}.{key}", "must be a list of strings")
        return tuple(value)


def parse_server_file(text: str, path: str = "<config>") -> ServerFile:
    """Read a real server's configuration from TOML ``text``; ``path`` names it in errors."""
    import tomllib  # loaded when a file is read: a serve without one never needs it

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ServerFileError(f"{path}: not valid TOML: {exc}") from None
    read = _Reader(path, data)
    if "runtime" not in data:
        raise read.fail("runtime", "required: the real server does not start without [runtime] type and execd_image")
    runtime = read.string("runtime", "type", None)
    if runtime not in _RUNTIMES:
        raise read.fail("runtime.type", f"must be 'docker' or 'kubernetes', got {runtime!r}")
    if read.string("runtime", "execd_image", None, min_length=1) is None:
        raise read.fail("runtime.execd_image", "required")
    profile: ProfileName = "docker" if runtime == "docker" else "kubernetes"
    if "tenants" in data:
        raise read.fail("tenants", "the multi-tenant key file is not read by the mock; give keys with --api-key")
    ingress = read.string("ingress", "mode", "direct")
    if profile == "docker" and ingress != "direct":
        raise read.fail("ingress.mode", "must be 'direct' when runtime.type = 'docker'")
    enforcement = read.string("egress", "mode", "dns")
    if enforcement not in ENFORCEMENT_MODES:
        raise read.fail("egress.mode", f"must be 'dns' or 'dns+nft', got {enforcement!r}")
    network_mode = (read.string("docker", "network_mode", "host") or "host").lower()
    if network_mode not in NETWORK_MODES:
        raise read.fail("docker.network_mode", f"the mock serves 'host' and 'bridge', got {network_mode!r}")
    low = read.integer("docker", "port_range_min", DEFAULT_PORT_RANGE[0], ge=1024, le=65535)
    high = read.integer("docker", "port_range_max", DEFAULT_PORT_RANGE[1], ge=1024, le=65535)
    assert low is not None and high is not None
    if low >= high:
        raise read.fail("docker.port_range_min", f"({low}) must be less than docker.port_range_max ({high})")
    if high - low < 100:
        raise read.fail("docker.port_range_max", f"port range ({low}-{high}) is too narrow: at least 100 ports")
    host = (read.string("server", "host", "0.0.0.0", min_length=1) or "").strip()
    eip = (read.string("server", "eip", None) or "").strip()
    public_host = eip or (outward_ip() if host.lower() in _ANY_ADDRESS else host)
    local_host = "127.0.0.1" if host.lower() in _ANY_ADDRESS else host
    proxy_base = eip.rstrip("/").replace("https://", "").replace("http://", "") if eip else None
    return ServerFile(
        path=path,
        profile=profile,
        api_key=read.string("server", "api_key", None),
        max_timeout=read.integer("server", "max_sandbox_timeout_seconds", None, ge=60),
        egress_image=read.string("egress", "image", None, min_length=1) is not None,
        enforcement=enforcement,
        network_mode=network_mode,
        public_host=public_host,
        proxy_base=proxy_base,
        port_range=(low, high),
        allowed_host_paths=read.strings("storage", "allowed_host_paths"),
        local_host=local_host,
    )


def load_server_file(path: str | Path) -> ServerFile:
    """Read the real server's configuration file at ``path`` (:func:`parse_server_file`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ServerFileError(f"{path}: cannot be read: {exc}") from None
    return parse_server_file(text, str(path))
