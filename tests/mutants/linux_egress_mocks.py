"""Deliberately wrong linux-runtime mocks the egress probe must catch: the model's policy changes, the
sandbox's firewall does not follow it.

- :class:`OpenFirewallTensorLake` answers a ``network`` PATCH as the real mock does and records the new
  policy as applied, but compiles no policy into the sandbox's nft table (everything stays open).
- :class:`OpenFirewallOpenSandbox` does the same with the egress sidecar's ``/policy`` changes.

They need the linux runtime (root, bubblewrap, nftables); they are not part of the mutation score.
"""

from __future__ import annotations

from typing import Any

from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.linux_egress import opensandbox_apply
from mockserver.opensandbox.model.egress import effective_policy
from mockserver.tensorlake import TensorLakeMock
from mockserver.tensorlake.linux_egress import tensorlake_apply
from mockserver.tensorlake.model.records import Sandbox


class OpenFirewallTensorLake(TensorLakeMock):
    """A TensorLake linux mock whose firewall is left open whatever the PATCH said."""

    def __init__(self, **options: Any) -> None:
        super().__init__(runtime="linux", **options)
        linux = self.linux
        assert linux is not None

        def reconcile(record: Sandbox) -> None:
            sandbox = linux.host.get(record.id)
            if sandbox is not None:
                tensorlake_apply(sandbox.firewall, None, self.dns)
                linux._applied[record.id] = (record.network, record.resources.memory_mb << 20)

        linux.reconcile = reconcile  # type: ignore[method-assign]
        self.model.on_change = reconcile


class OpenFirewallOpenSandbox(OpenSandboxMock):
    """An OpenSandbox linux mock whose firewall is left open whatever the sidecar's policy says."""

    def __init__(self, **options: Any) -> None:
        super().__init__(runtime="linux", **options)
        linux = self.linux
        assert linux is not None

        def follow(record: Any, sandbox: Any) -> None:
            opensandbox_apply(sandbox.firewall, None, linux.mode, self.dns)
            linux._applied[record.id] = effective_policy(record)

        linux._follow = follow  # type: ignore[method-assign]
