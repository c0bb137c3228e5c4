"""dpbandits.audit."""
