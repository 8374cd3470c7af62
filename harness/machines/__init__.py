"""The API state machines: Hypothesis rule-based machines whose oracle is the mock's own HTTP-free model.

Both providers have the same modules: ``compare`` (expected answers, normalisation, diffs), ``requests``
(what the machine sends), ``oracle`` (the model asked through its own rules), ``driver`` (the machine base:
config, HTTP plumbing, checks), ``machine`` (the rules) and ``run`` (seeded runs, mock and mutant runs).
:mod:`.common` holds what they share.
"""
