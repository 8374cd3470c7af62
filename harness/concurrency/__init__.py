"""Concurrency checking: run many clients against a target at once and decide whether what they saw is linearizable.

- :mod:`.history`: operations with invocation and response times, recorded from many threads.
- :mod:`.linearizability`: the generic checker (a Wing & Gong / porcupine search) over a sequential ``Spec``.
- :mod:`.workload`: the client threads, the shared sandbox pool, per-sandbox projection, the egress-probe hook.
- :mod:`.tensorlake_model`, :mod:`.opensandbox_model`: each provider's model as a ``Spec`` (the only modules that
  import the mocks' models).
- :mod:`.tensorlake_driver`, :mod:`.opensandbox_driver`: each provider's operations over HTTP.
- :mod:`.runner`: one provider's run end to end, its :class:`~.runner.ConcurrencyResult`, the mutant judge.

The contract that uses it is ``harness/contracts/test_concurrency.py``; see ``docs/harness.md``.
"""
