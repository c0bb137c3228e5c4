"""dpbandits.algorithms.dueling."""
