"""Record real traffic and replay it: cassettes, the recording proxy, the replayer, SDK flows, wire diffs.

* :mod:`.cassette`: the JSON Lines cassette format, secrets redacted as exchanges are built;
* :mod:`.proxy`: the transparent recording proxy (``sandproof record``);
* :mod:`.rewrite` and :mod:`.replay`: replaying a cassette against any target with ids, times and keys
  rewritten, compared with the differential run's normalisation and known deviations (``sandproof replay``);
* :mod:`.flows`: short SDK flows recorded one cassette each (the shipped fixtures, the SDK matrix);
* :mod:`.wire_diff`: what changed on the wire between two cassettes, field by field (SDK upgrades);
* :mod:`.cli`: the two commands.
"""
