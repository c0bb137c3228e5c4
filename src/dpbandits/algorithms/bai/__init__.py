"""dpbandits.algorithms.bai."""
