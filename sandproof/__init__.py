"""sandproof: mock servers, reference network policy and contract tests for sandbox providers.

The ``sandproof`` command is :func:`sandproof.cli.main`; importing this package loads nothing else.
"""
