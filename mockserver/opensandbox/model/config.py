"""How one OpenSandbox server is set up: keys, port tokens, egress enforcement, snapshot pace, host, volumes."""

from __future__ import annotations

from dataclasses import dataclass, field

from .auth import KeyTable

__all__ = ["CORS", "DEFAULT_HOST", "ENFORCEMENT_MODES", "CorsSettings", "ServerConfig"]

DEFAULT_HOST = "127.0.0.1:8080"
ENFORCEMENT_MODES = ("dns", "dns+nft")


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

    def __post_init__(self) -> None:
        if self.enforcement not in ENFORCEMENT_MODES:
            raise ValueError("enforcement_mode must be 'dns' or 'dns+nft'")
