"""dpbandits.envs."""
