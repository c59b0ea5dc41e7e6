"""``raygke``: what Pulumi itself does not do — offline checks and renders of a stack, and the
local environment.

Exit codes: 0 success; 1 the stack is invalid (every problem listed, one line each); 2 usage error
or unreadable file.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from components.spec import (
    ConfigError,
    GpuPool,
    StackConfig,
    StackFileError,
    TpuPool,
    load_stack_file,
)
from raygke.console import EXIT_FAILED, EXIT_USAGE, console, err

app = typer.Typer(
    name="raygke",
    help="Offline checks and renders of a ray-gke stack, and the local Ray environment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def stack_path(stack: str | None, config: Path | None, root: Path | None = None) -> Path:
    """The stack file named by ``--stack NAME`` (``Pulumi.NAME.yaml``) or ``--config FILE``.

    Raises:
        typer.Exit(2): neither or both given, or the file is missing.
    """
    if (stack is None) == (config is None):
        err.print("error: give exactly one of --stack NAME or --config FILE")
        raise typer.Exit(EXIT_USAGE)
    path = config if config is not None else (root or Path.cwd()) / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        why = "is a directory" if path.is_dir() else "no such file"
        err.print(f"error: cannot read {path}: {why}")
        raise typer.Exit(EXIT_USAGE)
    return path


def load_or_exit(path: Path) -> StackConfig:
    """Load and validate a stack file; print every problem and exit 1 when invalid, 2 if unreadable."""
    try:
        return load_stack_file(path)
    except StackFileError as e:
        err.print(
            f"error: cannot read {path} as a stack file: {'; '.join(e.problems)}", markup=False
        )
        raise typer.Exit(EXIT_USAGE) from None
    except ConfigError as e:
        err.print(f"[bold red]{path}: invalid stack config[/] ({len(e.problems)} problem(s))")
        for line in e.problems:
            err.print(f"  - {line}", markup=False)
        raise typer.Exit(EXIT_FAILED) from None
    except (OSError, UnicodeDecodeError) as e:
        err.print(f"error: cannot read {path}: {e}")
        raise typer.Exit(EXIT_USAGE) from None


def pools_table(cfg: StackConfig) -> Table:
    """Rich table: one row per node pool with machine type, accelerators, hosts and chips."""
    table = Table(title=f"node pools of {cfg.cluster.name} ({cfg.location})")
    for col in ("pool", "kind", "machine type", "accelerator", "hosts/slice", "chips/host", "max"):
        table.add_column(col)
    for p in cfg.node_pools:
        if isinstance(p, TpuPool):
            s = p.slice
            table.add_row(
                p.name,
                "tpu",
                s.machine_type,
                f"{s.generation.name} {s.topology} ({s.chips} chips)",
                str(s.hosts),
                str(s.chips_per_host),
                f"{p.max_slices} slices",
            )
        elif isinstance(p, GpuPool):
            table.add_row(
                p.name,
                "gpu",
                p.machine_type,
                f"{p.gpu.count} x {p.gpu.type}",
                "1",
                str(p.gpu.count),
                f"{p.max_nodes} nodes",
            )
        else:
            table.add_row(p.name, "cpu", p.machine_type, "-", "1", "-", f"{p.max_nodes} nodes")
    return table


def summary_line(cfg: StackConfig) -> str:
    """``3 node pools, 8 TPU chips on 2 hosts, 2 GPUs, 1 ray clusters, 2 jobs`` (at max scale)."""
    chips = sum(p.slice.chips * p.max_slices for p in cfg.node_pools if isinstance(p, TpuPool))
    hosts = sum(p.slice.hosts * p.max_slices for p in cfg.node_pools if isinstance(p, TpuPool))
    gpus = sum(p.gpu.count * p.max_nodes for p in cfg.node_pools if isinstance(p, GpuPool))
    return (
        f"{len(cfg.node_pools)} node pools, {chips} TPU chips on {hosts} hosts, {gpus} GPUs "
        f"(at max scale), {len(cfg.ray_clusters)} ray clusters, {len(cfg.jobs)} jobs"
    )


@app.command()
def check(
    stack: str | None = typer.Option(
        None, "--stack", "-s", help="Stack name: reads Pulumi.NAME.yaml"
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Path to a stack file"),
    render: bool = typer.Option(
        True,
        "--render/--no-render",
        help="Also render the stack and check the rendered objects (CRD schemas, scheduling, IAM)",
    ),
) -> None:
    """Validate a stack offline: config rules, and (with --render) the rendered stack."""
    path = stack_path(stack, config)
    cfg = load_or_exit(path)
    problems: list[str] = []
    if render:
        from components.checks.stack import check_stack

        problems = check_stack(cfg)
    if problems:
        err.print(f"[bold red]{path}: the rendered stack has {len(problems)} problem(s)[/]")
        for line in problems:
            err.print(f"  - {line}", markup=False)
        raise typer.Exit(EXIT_FAILED)
    console.print(pools_table(cfg))
    console.print(f"[green]ok[/] {path}: {summary_line(cfg)}")


@app.command()
def synth(
    stack: str | None = typer.Option(
        None, "--stack", "-s", help="Stack name: reads Pulumi.NAME.yaml"
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Path to a stack file"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (resources.json, manifests/)"),
) -> None:
    """Run the real Pulumi program under mocks (no CLI, no cloud) and write what it declares."""
    path = stack_path(stack, config)
    load_or_exit(path)
    from raygke.synth import print_summary
    from raygke.synth import synth as run_synth

    result = run_synth(path, out, stack)
    print_summary(result, out, console)


@app.command()
def docs(
    out: Path = typer.Option(
        Path("docs/stack-config.md"), "--out", "-o", help="Where the reference is written"
    ),
    check: bool = typer.Option(
        False, "--check", help="Write nothing; exit 1 when the file differs from the model"
    ),
) -> None:
    """Write the stack file reference, generated from the stack model (or check it is current)."""
    from components.spec.reference import render_reference

    text = render_reference()
    if check:
        current = out.read_text() if out.is_file() else None
        if current != text:
            err.print(f"{out} differs from the stack model; regenerate it: raygke docs --out {out}")
            raise typer.Exit(EXIT_FAILED)
        console.print(f"[green]ok[/] {out} matches the stack model")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    console.print(f"wrote {out}")


def _register_subcommands() -> None:
    from raygke.local import app as local_app

    app.add_typer(local_app, name="local", help="The local Ray environment (no cloud).")


_register_subcommands()


def main() -> None:
    """Console-script entry point."""
    app()
