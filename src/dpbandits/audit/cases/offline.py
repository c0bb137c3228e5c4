"""Privacy cases of the offline family (being written: see the privacy contract, issue 12)."""
