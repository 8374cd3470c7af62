"""Property checks for network-policy engines of each provider, with the reference engine as oracle."""
