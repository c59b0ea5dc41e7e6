"""``raygke images``: the requirement files of the project's Ray images
(:mod:`components.images.render`)."""

from __future__ import annotations

import typer

from raygke.console import EXIT_FAILED, console, err

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.command()
def lock(
    check: bool = typer.Option(
        False, "--check", help="Write nothing; exit 1 when a file differs from pyproject.toml"
    ),
) -> None:
    """Generate images/requirements-{cpu,cpu-serve,gpu,gpu-tf,tpu,tpu-serve}.txt from pyproject.toml's extras."""
    from components.images.render import (
        ROOT,
        locked_ray_versions,
        stale_requirements,
        write_requirements,
    )

    if check:
        stale = stale_requirements()
        for line in stale:
            err.print(line, markup=False)
        if stale:
            raise typer.Exit(EXIT_FAILED)
        console.print(
            "images/requirements-*.txt are current (they lock Ray "
            f"{', '.join(locked_ray_versions()) or 'none'}: the one ray.version the project's "
            "images build for)"
        )
        return
    for path in write_requirements():
        console.print(f"wrote {path.relative_to(ROOT)}")
    console.print(
        f"locked Ray {', '.join(locked_ray_versions()) or 'none'} (set ray.version to it)"
    )
