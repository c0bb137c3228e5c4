"""``python -m dpbandits``: the command line (see :mod:`dpbandits.cli`)."""

from dpbandits.cli import main

if __name__ == "__main__":
    main()
