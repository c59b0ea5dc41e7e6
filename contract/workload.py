"""The :class:`Workload` record and the registry that holds them (standard library only).

The built-in workloads are registered by :mod:`contract.registry` (import that module to look
workloads up); this module is the container both the registry and the argument classes that
consult it (``tune_lm``'s ``trainer`` choices, :mod:`contract.args.tune_lm`) import, so neither
imports the other. Every consumer derives its lists from the entries: the jobs, the Serve
applications, the trainers and their tune names, the local variants, the image needs. A workload
registered at run time (:func:`register`) is picked up by all of them.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from contract.args.base import ArgRow, WorkloadArgs
from contract.problems import Problem

# What a workload is for; ``raygke local run`` and the stack checks key on this, never on names.
#   data: writes the dataset (prepare); trainer: trains one model and writes checkpoints;
#   tuner: a sweep over a trainer; evaluator: scores a checkpoint; inference: runs a trained
#   model over a dataset (batch inference, writes artifacts); service: a Ray Serve app.
Role = Literal["data", "trainer", "tuner", "evaluator", "inference", "service"]
ROLES: tuple[str, ...] = ("data", "trainer", "tuner", "evaluator", "inference", "service")
ACCELERATORS: tuple[str, ...] = ("cpu", "gpu", "tpu")


@dataclass(frozen=True)
class Workload:
    """A Ray program that can be submitted as a job (or deployed as a Serve application).

    Attributes:
        name: registry key ("prepare", "train_lm", "evaluate", ...).
        module: importable module path run with ``python -m``.
        description: one line for humans.
        args: the workload's argument dataclass (:mod:`contract.args`), the one source of its
            argument names, types, defaults, units and meanings.
        role: one of :data:`ROLES`.
        framework: the ML framework it computes with ("torch", "jax", "tensorflow") or "" (Ray
            Data / Ray Core only); ``raygke local run --accelerator gpu`` refuses a
            ``tensorflow`` one in an environment without TensorFlow's CUDA build.
        num_cpus: CPUs the driver / each Train worker asks for.
        accelerators: subset of :data:`ACCELERATORS` the workload can use.
        writes: the buckets (``datasets``, ``checkpoints``, ``artifacts``) it writes to, so the
            platform can check that the job's service account may write there.
        needs: the Python distributions beyond Ray it imports (PyPI names, as pinned in
            ``pyproject.toml``), on the driver and on the workers. ``raygke check`` refuses a job
            whose image does not provide each at the project's pin
            (``components/images/checks.py``).
        unsupported: ``(accelerator, why)`` pairs: the reason given when a job asks for an
            accelerator outside :attr:`accelerators` (see :meth:`refusal`).
        serve_app: for a Ray Serve application, its builder ``module:function`` (the Serve
            config's ``import_path``,
            https://docs.ray.io/en/latest/serve/advanced-guides/app-builder-guide.html); None
            for jobs.
        local_variants: ``accelerator -> workload name``: the workload ``raygke local run
            --accelerator <accelerator>`` runs instead (train_lm -> train_lm_jax on ``tpu``);
            the replaced job's ``--set`` values apply to the variant.
        local_args: ``accelerator -> arguments`` ``raygke local run`` adds on that accelerator
            (``use_gpu: true`` on ``gpu``); ``--set`` values win over them.
        tune_name: for a trainer, the name ``tune_lm``'s ``trainer`` argument chooses it by
            ("torch"); None when ``tune_lm`` cannot run its step.
        tune_stepper: ``module:function`` building a trial's stepper,
            ``function(args, restored, threads, use_gpu) -> (stepper, start_step, first_loss)``
            (``workloads/tune_lm.py`` calls it); required with :attr:`tune_name`.
    """

    name: str
    module: str
    description: str
    args: type[WorkloadArgs]
    role: Role = "trainer"
    framework: str = ""
    num_cpus: float = 1.0
    accelerators: tuple[str, ...] = ("cpu",)
    writes: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    unsupported: tuple[tuple[str, str], ...] = ()
    serve_app: str | None = None
    local_variants: Mapping[str, str] = field(default_factory=dict)
    local_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    tune_name: str | None = None
    tune_stepper: str | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.role not in ROLES:
            problems.append(f"role {self.role!r} is not one of {', '.join(ROLES)}")
        bad = [a for a in (*self.accelerators, *self.local_variants, *self.local_args)]
        bad = [a for a in bad if a not in ACCELERATORS]
        if bad:
            problems.append(f"accelerator {bad[0]!r} is not one of {', '.join(ACCELERATORS)}")
        if (self.role == "service") != (self.serve_app is not None):
            problems.append("a service needs serve_app, and only a service has one")
        if (self.tune_name is None) != (self.tune_stepper is None):
            problems.append("tune_name and tune_stepper go together")
        if self.tune_stepper is not None and ":" not in self.tune_stepper:
            problems.append(f"tune_stepper {self.tune_stepper!r} is not module:function")
        if self.name != self.args.WORKLOAD:
            problems.append(f"args {self.args.__name__}.WORKLOAD is {self.args.WORKLOAD!r}")
        if problems:
            raise ValueError(f"workload {self.name!r}: " + "; ".join(problems))
        object.__setattr__(self, "local_variants", MappingProxyType(dict(self.local_variants)))
        object.__setattr__(
            self,
            "local_args",
            # the arguments as JSON gives them (a copy each entry cannot change under another)
            MappingProxyType(
                {k: json.loads(json.dumps(dict(v))) for k, v in self.local_args.items()}
            ),
        )

    def refusal(self, accelerator: str) -> str | None:
        """One line refusing ``accelerator`` (None when the workload supports it): the kinds it
        supports, and the recorded reason when there is one."""
        if accelerator in self.accelerators:
            return None
        why = dict(self.unsupported).get(accelerator)
        return (
            f"workload {self.name!r} supports {', '.join(self.accelerators)}, not {accelerator}"
            + (f": {why}" if why else "")
        )

    def needs_for(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        """:attr:`needs` with the job arguments ``args``: for a workload with a ``trainer``
        argument (``tune_lm``), plus the needs of the trainer it chooses by tune name
        (:func:`tune_trainers`; the default trainer's when unset), in order, without repeats.
        An unknown trainer adds nothing (the argument check reports it)."""
        out = list(self.needs)
        if "trainer" in self.default_args:
            trainer = args.get("trainer", self.default_args["trainer"])
            chosen = tune_trainers().get(trainer) if isinstance(trainer, str) else None
            if chosen is not None and chosen in WORKLOADS:
                out += WORKLOADS[chosen].needs
        return tuple(dict.fromkeys(out))

    @property
    def is_service(self) -> bool:
        """True for a Ray Serve application (deployed as a RayService, never run as a job)."""
        return self.serve_app is not None

    @property
    def trains(self) -> bool:
        """True for a trainer or a tuner (it writes checkpoints, takes a ``scaling``)."""
        return self.role in ("trainer", "tuner")

    @property
    def default_args(self) -> Mapping[str, Any]:
        """Every argument's default (read-only), from :attr:`args`."""
        return MappingProxyType(self.args.defaults())

    def arg_problems(self, args: Mapping[str, Any]) -> list[Problem]:
        """Problems with job arguments, each of the argument it is about (see
        :meth:`WorkloadArgs.problems`)."""
        return self.args.problems(args)

    def parse(self, args: Mapping[str, Any] | None = None) -> Any:
        """The typed arguments (an instance of :attr:`args`).

        Raises:
            contract.args.base.ArgError: one line per problem.
        """
        return self.args.parse(args)

    def arg_rows(self) -> list[ArgRow]:
        """Documentation rows: name, type, default, unit, meaning of each argument."""
        return self.args.rows()

    def config(self, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Return ``default_args`` updated with ``args`` (a new dict)."""
        merged = self.args.defaults()
        merged.update(args or {})
        return merged

    def entrypoint(self, args: Mapping[str, Any] | None = None) -> str:
        """Shell command running the workload:
        ``python -m <module> --config-json '<json of default_args | args>'``, the JSON with
        sorted keys and shlex-quoted.

        Raises:
            contract.args.base.ArgError: ``args`` do not fit the workload (e.g. a YAML date where
                a string is expected), so no unserialisable value reaches ``json.dumps``.
        """
        self.args.parse(args)
        payload = json.dumps(self.config(args), sort_keys=True, separators=(",", ":"))
        return f"python -m {self.module} --config-json {shlex.quote(payload)}"


_REGISTRY: dict[str, Workload] = {}
# Read-only live view: a workload registered later shows here.
WORKLOADS: Mapping[str, Workload] = MappingProxyType(_REGISTRY)


def register(workload: Workload) -> Workload:
    """Add ``workload`` to the registry and return it.

    Raises:
        ValueError: a workload of that name, or a trainer of that tune name, is registered.
    """
    if workload.name in _REGISTRY:
        raise ValueError(f"workload {workload.name!r} is already registered")
    if workload.tune_name is not None and workload.tune_name in tune_trainers():
        raise ValueError(
            f"workload {workload.name!r}: tune name {workload.tune_name!r} is taken by "
            f"{tune_trainers()[workload.tune_name]}"
        )
    _REGISTRY[workload.name] = workload
    return workload


def unregister(name: str) -> None:
    """Remove the workload ``name`` (a no-op when absent)."""
    _REGISTRY.pop(name, None)


@contextmanager
def registered(workload: Workload) -> Iterator[Workload]:
    """Register ``workload`` for the ``with`` block (tests, plugins), then remove it."""
    register(workload)
    try:
        yield workload
    finally:
        unregister(workload.name)


def get_workload(name: str) -> Workload:
    """Return the workload called ``name``.

    Raises:
        KeyError: unknown name; the message lists the valid names.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        valid = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown workload {name!r}; valid names: {valid}") from None


def with_role(*roles: str) -> tuple[str, ...]:
    """The names of the workloads whose role is one of ``roles``, in registration order."""
    return tuple(w.name for w in _REGISTRY.values() if w.role in roles)


def jobs() -> tuple[str, ...]:
    """The workloads run as jobs (``raygke local run``, stack ``jobs:``)."""
    return tuple(w.name for w in _REGISTRY.values() if not w.is_service)


def serve_apps() -> tuple[str, ...]:
    """The Ray Serve applications (stack ``services:``, ``raygke local serve``)."""
    return tuple(w.name for w in _REGISTRY.values() if w.is_service)


def trainers() -> tuple[str, ...]:
    """The training workloads (role ``trainer``; each writes checkpoints ``evaluate`` scores)."""
    return with_role("trainer")


def tune_trainers() -> Mapping[str, str]:
    """``tune_lm``'s ``trainer`` choices: tune name -> trainer workload name."""
    return MappingProxyType(
        {w.tune_name: w.name for w in _REGISTRY.values() if w.tune_name is not None}
    )
