"""TensorLake egress-policy checks: strategies, properties, the docs' fixed examples, and the check runner."""
