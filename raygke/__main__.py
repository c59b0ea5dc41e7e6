"""``python -m raygke`` runs the same CLI as the ``raygke`` console script."""

from raygke.cli import main

main()
