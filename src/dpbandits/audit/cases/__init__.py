"""Privacy cases of each algorithm family, registered with :mod:`dpbandits.audit.contract`.

One module per family (``bai``, ``dueling``, ``kernel``, ``offline``); each registers factories that
build tiny, fast instances with adversarial neighbours and negative controls. Importing a module
registers its cases; :func:`dpbandits.audit.contract.load_privacy_cases` imports them all.
"""
