"""``raygke local``: placeholder, replaced by the local-environment implementation."""

import typer

app = typer.Typer(no_args_is_help=True)
