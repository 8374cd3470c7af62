"""The OpenSandbox mock's HTTP face: each route parses a request, calls one model function and renders it.

:mod:`.gate` (request ids and the lifecycle API key), :mod:`.lifecycle` (the lifecycle server),
:mod:`.ports` (the sandbox-port dispatcher), :mod:`.execd` and :mod:`.files` (execd), :mod:`.egress` (the
sidecar), :mod:`.admin` (``/_mock/opensandbox``), :mod:`.render` (wire formats of the answers). A route gets
a small context of what it uses, never the mock.
"""
