"""Stateful, fault-injectable mock servers of the TensorLake and OpenSandbox sandbox APIs."""
