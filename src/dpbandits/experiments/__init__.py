"""dpbandits.experiments."""
