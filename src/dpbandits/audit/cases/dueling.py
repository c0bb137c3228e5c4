"""Privacy cases of the dueling family (being written: see the privacy contract, issue 12)."""
