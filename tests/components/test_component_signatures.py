"""Every Pulumi component of ``components/`` follows Pulumi's ``(name, args, opts)``: a
``ComponentResource`` whose constructor takes its name, one ``<Class>Args`` dataclass and the
resource options, nothing else (issue 35 item 3)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path

import pulumi

ROOT = Path(__file__).resolve().parents[2]


def components() -> list[type[pulumi.ComponentResource]]:
    """Every ``ComponentResource`` subclass defined in a ``components/*/component.py``."""
    out = []
    for path in sorted((ROOT / "components").glob("*/component.py")):
        module = importlib.import_module(f"components.{path.parent.name}.component")
        out += [
            c
            for c in vars(module).values()
            if inspect.isclass(c)
            and issubclass(c, pulumi.ComponentResource)
            and c.__module__ == module.__name__
        ]
    return out


def signature_problem(cls: type) -> str | None:
    """Why ``cls.__init__`` is not ``(self, name, args: <cls>Args, opts=None)``, or None."""
    params = list(inspect.signature(cls.__init__).parameters.values())
    names = [p.name for p in params]
    if names != ["self", "name", "args", "opts"] or params[3].default is not None:
        return f"{cls.__name__}({', '.join(names[1:])})"
    module = inspect.getmodule(cls)
    args = getattr(module, f"{cls.__name__}Args", None)
    if args is None or not dataclasses.is_dataclass(args):
        return f"{cls.__name__}: no dataclass {cls.__name__}Args beside it"
    if params[2].annotation not in (args, args.__name__):
        return f"{cls.__name__}: args annotated {params[2].annotation!r}"
    return None


def test_every_component_takes_name_args_opts() -> None:
    found = components()
    assert len(found) >= 14  # every concept's component, GpuNetworks and WorkloadAccess too
    assert [p for c in found if (p := signature_problem(c))] == []


def test_a_component_with_positional_config_is_named() -> None:
    class Positional(pulumi.ComponentResource):
        def __init__(self, name: str, cfg: object, *, provider: object, opts=None) -> None: ...

    assert signature_problem(Positional) == "Positional(name, cfg, provider, opts)"


def args_carrying_the_stack() -> list[str]:
    """The ``<Class>Args`` of the components with a field annotated ``StackConfig``."""
    out = []
    for cls in components():
        args = getattr(inspect.getmodule(cls), f"{cls.__name__}Args")
        if any("StackConfig" in str(f.type) for f in dataclasses.fields(args)):
            out.append(args.__name__)
    return sorted(out)


# Issue 48: each *Args carries its own section (the plan or context, the blocks it renders), not
# the whole StackConfig. The one exception: RayResourcesArgs, whose component renders every Ray
# object of the stack (components.raycrs.render.render_manifests, the whole-stack entry point).
ARGS_CARRYING_THE_STACK = {"RayResourcesArgs"}


def test_only_the_ray_resources_args_carry_the_whole_stack() -> None:
    found = args_carrying_the_stack()
    assert "NetworkArgs" not in found  # narrowed: the context and its block
    assert set(found) == ARGS_CARRYING_THE_STACK, found
