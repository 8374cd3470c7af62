"""The OpenSandbox mock's HTTP face: each route parses a request, calls one model function and renders it.

:mod:`.gate` (request ids and the lifecycle API key), :mod:`.lifecycle` and :mod:`.diagnostics` (the
lifecycle server), :mod:`.ports` (the sandbox-port dispatcher), :mod:`.execd`, :mod:`.code`, :mod:`.pty` and
:mod:`.files` (execd), :mod:`.egress` (the sidecar), :mod:`.admin` (``/_mock/opensandbox``), :mod:`.render`
(wire formats of the answers). A route module is module-level handlers that take a small context of what
they use (never the mock) and the request, and a table of them bound by :func:`mockserver.asgi.handlers.bind`.
"""
