"""dpbandits.algorithms.kernel."""
