"""``python -m raygke`` runs the same CLI as the ``raygke`` console script."""

import sys

from raygke.cli import main

sys.exit(main())
