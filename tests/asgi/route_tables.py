"""The routes of both mocks, read from their own apps: what the every-route sweeps iterate over.

TensorLake: the lifecycle/admin app and the in-sandbox management API behind the proxy (reached with a
``Host: <id>.sandbox.localhost`` header); OpenSandbox: the lifecycle/admin app and each sandbox-port service
behind the direct mount (``/direct/{sandbox_id}/{port}/...``). A route added to a mock is swept without a
change here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount, Route

from mockserver.asgi.routing import OnFirstCall
from mockserver.opensandbox.routes.ports import PortDispatcher

__all__ = ["PARAM", "fill", "leaves", "starlettes"]

#: A path parameter in a route template: ``{name}`` or ``{name:converter}``.
PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")


def starlettes(app: Any) -> Iterator[Starlette]:
    """Yield every Starlette app reachable through the wrappers' ``app``/``fallback``/``context`` attributes."""
    seen: set[int] = set()
    todo = [app]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, Starlette):
            yield current
            continue
        if isinstance(current, OnFirstCall):  # a part built on its first request: build it now
            todo.append(current.get())
            continue
        for name in ("app", "fallback"):
            todo.append(getattr(current, name, None))
        context = getattr(current, "context", None)
        todo.append(getattr(context, "management", None))


def leaves(
    routes: list[BaseRoute], methods: frozenset[str] | None = None, prefix: str = ""
) -> Iterator[tuple[str, str]]:
    """Yield (method, template) for every route, through the port mounts; only ``methods`` when given."""
    for route in routes:
        if isinstance(route, Mount) and isinstance(route.app, PortDispatcher):
            for port, service in route.app.ctx.services.items():
                router: Any = service.get() if isinstance(service, OnFirstCall) else service
                yield from leaves(router.routes, methods, prefix + route.path.replace("{port:int}", str(port)))
        elif isinstance(route, Route):
            chosen = (route.methods or set()) - {"HEAD"}
            for method in sorted(chosen if methods is None else chosen & methods):
                yield method, prefix + route.path


def fill(template: str, values: dict[str, str], default: str = "x") -> str:
    """Return the template with each parameter replaced by its value in ``values`` (``default`` otherwise)."""
    return PARAM.sub(lambda m: values.get(m.group(1), default), template)
