"""Privacy cases of the kernel family (being written: see the privacy contract, issue 12)."""
