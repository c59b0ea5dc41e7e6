"""The test suite (a package, so tests import ``tests.helpers``)."""

import os

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment (execnet's
# gateway sets them). The CLI takes a pipe's width from COLUMNS (raygke.console, imported by the
# conftest), and the tests that read whole table rows expect a log's width (160), as in a
# plain `pytest` run.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
