"""Differential runs against the real opensandbox-server 1.1.1 (on a fake Docker Engine API), and its deviations."""
