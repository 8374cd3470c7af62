"""The OpenSandbox API state machine (lifecycle, pause/resume, renew, endpoints, execd, egress, expiry)."""
