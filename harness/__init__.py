"""Contract tests, pytest plugin and CLI that check any sandbox-provider implementation."""
