"""The contract suite ``sandproof check`` runs: pytest modules marked ``contract(provider, operation)``.

Each module is an ordinary pytest file that uses the ``sandproof_target`` fixture from ``harness.plugin``.
See ``docs/harness.md`` for the plug-in interface.
"""
