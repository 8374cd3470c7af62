"""The providers' OpenAPI documents as Schemathesis contracts: specs, where they are served, deviations, runs."""
