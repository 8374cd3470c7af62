"""Reference network policy for TensorLake, OpenSandbox and NeMo Gym's sandbox restriction."""
