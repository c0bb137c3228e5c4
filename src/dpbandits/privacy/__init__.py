"""dpbandits.privacy."""
