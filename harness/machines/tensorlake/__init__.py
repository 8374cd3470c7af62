"""The TensorLake API state machine (lifecycle, PATCH, ports and ingress, suspend/resume, egress probes)."""
