"""``python -m dpbandits.serve --db PATH|URL``: :func:`dpbandits.serve.server.main`."""

from dpbandits.serve.server import main

if __name__ == "__main__":
    main()
