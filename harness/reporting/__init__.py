"""Reports of contract runs: the per-operation report, the deviations document and the mutation score."""
