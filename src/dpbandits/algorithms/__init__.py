"""dpbandits.algorithms."""
