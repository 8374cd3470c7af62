"""How one OpenSandbox server is set up: keys, port tokens, egress, snapshot pace, endpoints, timeouts, volumes.

:class:`ServerConfig` holds the settings the rules read, and the rules of the settings themselves
(:meth:`ServerConfig.policy_refusal`); :mod:`.server_file` reads them from
the real server's own TOML file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .auth import KeyTable

__all__ = [
    "CORS",
    "DEFAULT_HOST",
    "DEFAULT_PORT_RANGE",
    "ENFORCEMENT_MODES",
    "HOST_MODE_POLICY",
    "NETWORK_MODES",
    "NO_EGRESS_IMAGE",
    "CorsSettings",
    "ServerConfig",
]

DEFAULT_HOST = "127.0.0.1:8080"
ENFORCEMENT_MODES = ("dns", "dns+nft")
#: The real Docker runtime's endpoint shapes (``[docker] network_mode``): ``host`` answers ``{host}:{port}``,
#: ``bridge`` ``{host}:{hostPort}/proxy/{port}`` (``services/docker/networking.py``, ``get_endpoint``).
NETWORK_MODES = ("host", "bridge")
#: The real server's ``[docker] port_range_min`` / ``port_range_max`` defaults.
DEFAULT_PORT_RANGE = (40000, 60000)
#: The real server's answer to a ``networkPolicy`` when no egress sidecar image is configured (``validators.py``).
NO_EGRESS_IMAGE = "egress.image must be configured when networkPolicy is provided."
#: The real Docker runtime's answer to a ``networkPolicy`` in host network mode (``networking.py``).
HOST_MODE_POLICY = "networkPolicy is not supported when docker network_mode=host."


@dataclass(frozen=True)
class CorsSettings:
    """The lifecycle server's CORS settings: FastAPI's ``CORSMiddleware`` as the real 1.1.1 server sets it up.

    Any origin (echoed, since credentials are allowed), any method and header; ``OPEN-SANDBOX-ORIGIN`` is
    exposed. A preflight is answered before authentication (200 ``OK``); every other lifecycle answer
    carries ``Vary: Origin``, and with an ``Origin`` the ``Access-Control-Allow-*`` headers (measured).
    """

    allow_origins: tuple[str, ...] = ("*",)
    allow_credentials: bool = True
    allow_methods: tuple[str, ...] = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "QUERY")
    allow_headers: tuple[str, ...] = ("*",)
    expose_headers: tuple[str, ...] = ("OPEN-SANDBOX-ORIGIN",)
    max_age: int = 600


CORS = CorsSettings()


@dataclass(frozen=True)
class ServerConfig:
    """The server-wide settings the rules read (the runtime profile lives in the state).

    ``execd_token`` / ``egress_token`` make the endpoints carry and the ports require access headers;
    ``enforcement`` is the egress sidecar's ``dns`` (names only) or ``dns+nft`` (also raw IPs);
    ``snapshot_seconds`` is how long a snapshot stays ``Creating``; ``default_host`` is the host endpoint
    URLs name when a request carries no ``Host``; ``user_ports`` says whether ports other than execd's and
    the sidecar's reach services of the sandbox's own (the linux runtime's real processes, the emulator's echo
    app; the mock sets it on both, the contract oracle's default leaves it off).
    ``egress_image`` says whether the server has an egress sidecar image (the real server's ``[egress] image``):
    the mock's default has one, so a ``networkPolicy`` is enforced; the real server's default has none, and then
    a create that carries any ``networkPolicy`` answers 400 (``egress.image must be configured ...``).
    ``max_timeout`` is the real server's ``[server] max_sandbox_timeout_seconds`` (None: no bound).
    ``network_mode`` is None for the mock's own endpoints (``{host}/direct/{id}/{port}``, every port served from
    the mock's socket), or the real Docker runtime's ``host`` / ``bridge`` shape, whose host is ``public_host``
    (``[server] eip``, else ``[server] host``) and whose bridge host ports are drawn from ``port_range``;
    ``proxy_base`` is the ``[server] eip`` a ``use_server_proxy`` endpoint starts with instead of the request's
    own host and mount.
    """

    access: KeyTable = field(default_factory=KeyTable)
    execd_token: str | None = None
    egress_token: str | None = None
    enforcement: str = "dns"
    snapshot_seconds: float = 0.0
    default_host: str = DEFAULT_HOST
    user_ports: bool = False
    allowed_host_paths: tuple[str, ...] = ()
    egress_image: bool = True
    max_timeout: int | None = None
    network_mode: str | None = None
    public_host: str = "127.0.0.1"
    proxy_base: str | None = None
    port_range: tuple[int, int] = DEFAULT_PORT_RANGE

    def __post_init__(self) -> None:
        if self.enforcement not in ENFORCEMENT_MODES:
            raise ValueError("enforcement_mode must be 'dns' or 'dns+nft'")
        if self.network_mode is not None and self.network_mode not in NETWORK_MODES:
            raise ValueError(f"network_mode must be None, 'host' or 'bridge', got {self.network_mode!r}")

    def policy_refusal(self) -> str | None:
        """Return the 400 message a create carrying a ``networkPolicy`` gets here, or None when it is served.

        The real Docker runtime's order (``_ensure_network_policy_support``): host network mode first, then a
        missing ``[egress] image``.
        """
        if self.network_mode == "host":
            return HOST_MODE_POLICY
        if not self.egress_image:
            return NO_EGRESS_IMAGE
        return None
