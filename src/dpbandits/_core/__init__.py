"""Core utilities shared by every layer: randomness, validation, errors and types."""
