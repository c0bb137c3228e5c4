"""dpbandits.algorithms.offline."""
