"""The machinery every workload's argument dataclass shares: field declaration (:func:`arg`),
the type and range checker, the command-line value parser and the job-argument binding.

Standard library only: the infrastructure (``components/``, ``raygke``) and the workloads in the
Ray image both import it. One dataclass per workload lives beside this module
(:mod:`contract.args.prepare`, :mod:`contract.args.train_lm`, ...). From each are derived:

* the defaults merged into a job's JSON config (:meth:`WorkloadArgs.defaults`);
* the type and range checks, one readable line per problem, optional fields included
  (:meth:`WorkloadArgs.problems`; :meth:`WorkloadArgs.parse` raises :class:`ArgError`);
* the ``--set JOB.KEY=VALUE`` value parser (:func:`parse_value`);
* the job-argument binding used both by the RayJob manifests on GKE
  (``components/raycrs/render.py`` ``job_args``) and by ``raygke local run``
  (``raygke/local/jobs.py`` ``job_args``): :func:`bind` (by name:
  :func:`contract.registry.bind_job_args`);
* the documentation rows (:meth:`WorkloadArgs.rows`: name, type, default, unit, meaning).

Why this checker and not pydantic dataclasses (considered, issue 20): pydantic is present both
in the infrastructure's environment and, through ``ray[default]``, in the Ray images, but at
versions two different pins choose, and ``contract/`` is standard library only so that its
behaviour cannot differ between the two sides. The checker is also what makes the problem lines
one sentence naming the workload, the argument, the value and what is allowed
(``argument 'steps' of workload train_lm is 'ten'; expected int (e.g. 450)``); pydantic's
(``Input should be a valid integer, unable to parse string as an integer``) would be rewritten
into that shape, and its lax mode turns ``"10"`` into 10 where a job file's typo must be refused.
A workload module reads its typed object (``args.steps``), never ``config.get(key, default)``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

from contract.errors import ConfigurationError
from contract.problems import Problem

# Largest integer argument: exact in JSON (IEEE double) and in every framework's int64.
MAX_INT = 2**53


class ArgError(ConfigurationError):
    """Workload arguments that do not fit the workload's dataclass. ``problems`` holds one
    :class:`~contract.problems.Problem` per problem (field named, value shown, what is allowed;
    its ``path`` the argument's name, ``""`` for a rule over several); ``str()`` joins them with
    ``"; "``."""

    def __init__(self, problems: Sequence[Problem | str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = [p if isinstance(p, Problem) else Problem("", p) for p in problems]


def arg(
    default: Any,
    doc: str,
    unit: str = "",
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    check: Callable[[Any], str | None] | None = None,
) -> Any:
    """A dataclass field of a workload's arguments.

    Args:
        default: the default value (a list is copied per instance).
        doc: the meaning, one sentence.
        unit: the unit of the value ("steps", "rows", "bytes", "FLOP/s", "path or URI", ...).
        minimum: smallest allowed number (checked for int/float values).
        maximum: largest allowed number (likewise).
        check: extra rule, ``value -> problem text or None`` (e.g. the ``scaling`` shape).
    """
    meta = {
        "doc": doc,
        "unit": unit,
        "minimum": minimum,
        "maximum": maximum,
        "check": check,
        "default": default,
    }
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: json.loads(json.dumps(default)), metadata=meta)
    return field(default=default, metadata=meta)


# ---------------------------------------------------------------------------------- type checks


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if tp is type(None):
        return "None"
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin is list:
        return f"list of {_type_name(get_args(tp)[0])}"
    if origin in (dict, Mapping):
        return "mapping"
    if tp is Any:
        return "any"
    return getattr(tp, "__name__", str(tp))


def _accepts(tp: Any, value: Any) -> bool:
    """Whether ``value`` (as JSON/YAML gives it) fits the annotation ``tp``. An int is a fine
    float; a bool is never an int or float."""
    origin = get_origin(tp)
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if origin in (Union, types.UnionType):
        return any(_accepts(a, value) for a in get_args(tp))
    if origin is Literal:
        return any(type(value) is type(a) and value == a for a in get_args(tp))
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin is list:
        (item,) = get_args(tp)
        return isinstance(value, (list, tuple)) and all(_accepts(item, v) for v in value)
    if origin in (dict, Mapping):
        key_t, val_t = get_args(tp) or (str, Any)
        return isinstance(value, Mapping) and all(
            _accepts(key_t, k) and _accepts(val_t, v) for k, v in value.items()
        )
    return isinstance(value, tp)


def _show(value: Any) -> str:
    """A value for a problem line: its repr, plus its type when that is not a JSON type (e.g.
    a YAML date ``2001-12-14`` -> ``datetime.date(2001, 12, 14) (a date)``)."""
    if isinstance(value, (str, int, float, bool, list, dict, type(None))):
        return repr(value)
    return f"{value!r} (a {type(value).__name__})"


def parse_value(raw: str) -> Any:
    """Parse a command-line value (``--set job.key=VALUE``, ``--key VALUE``): JSON when it
    parses (``10`` -> 10, ``true`` -> True, ``[1,2]`` -> list), else the string itself."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


# ------------------------------------------------------------------------------------ the base


@dataclass(frozen=True)
class ArgRow:
    """One documented argument: ``type`` as text ("int", "str or None"), ``default`` as JSON
    text, ``unit`` ("" when unitless), ``doc`` the meaning."""

    name: str
    type: str
    default: str
    unit: str
    doc: str


_HINTS: dict[type, dict[str, Any]] = {}


@dataclass(frozen=True)
class WorkloadArgs:
    """Base of every workload's argument dataclass. ``WORKLOAD`` is the registry name."""

    WORKLOAD: ClassVar[str] = ""
    # Rules across arguments, over the defaults updated with the given values: each returns a
    # problem text or None.
    RULES: ClassVar[tuple[Callable[[Mapping[str, Any]], str | None], ...]] = ()

    @classmethod
    def _hints(cls) -> dict[str, Any]:
        if cls not in _HINTS:
            _HINTS[cls] = get_type_hints(cls)
        return _HINTS[cls]

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The argument names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every argument's default (a new dict, JSON-serialisable)."""
        return {
            f.name: json.loads(json.dumps(f.metadata["default"])) for f in dataclasses.fields(cls)
        }

    @classmethod
    def problems(cls, values: Mapping[str, Any]) -> list[Problem]:
        """Problems with ``values`` (a subset of the arguments), one each: an unknown name
        (the accepted ones listed), a value of the wrong type (``None`` only where the type
        allows it), a number under its minimum, or a field rule's complaint, each a Problem of
        the argument's name (its ``path``); then, when each argument is right, the workload's
        rules over several (:attr:`RULES`), Problems of no one argument (``path`` ``""``)."""
        hints = cls._hints()
        fields = {f.name: f for f in dataclasses.fields(cls)}
        out: list[Problem] = []
        for key, value in values.items():
            f = fields.get(key)
            if f is None:
                out.append(
                    Problem(
                        key,
                        f"unknown argument {key!r} for workload {cls.WORKLOAD}; accepted: "
                        f"{', '.join(sorted(fields))}",
                    )
                )
                continue
            where = f"argument {key!r} of workload {cls.WORKLOAD} is {_show(value)}"
            tp = hints[key]
            if not _accepts(tp, value):
                default = f.metadata["default"]
                eg = f" (e.g. {default!r})" if default is not None else ""
                out.append(Problem(key, f"{where}; expected {_type_name(tp)}{eg}"))
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if number and isinstance(value, float) and not math.isfinite(value):
                out.append(Problem(key, f"{where}; must be a finite number"))
                continue
            if number and isinstance(value, int) and abs(value) > MAX_INT:
                out.append(
                    Problem(
                        key, f"{where}; must be at most {MAX_INT} in size (an exact JSON integer)"
                    )
                )
                continue
            minimum, maximum = f.metadata["minimum"], f.metadata["maximum"]
            if number and minimum is not None and value < minimum:
                out.append(Problem(key, f"{where}; must be >= {minimum:g}"))
                continue
            if number and maximum is not None and value > maximum:
                out.append(Problem(key, f"{where}; must be <= {maximum:g}"))
                continue
            check = f.metadata["check"]
            why = check(value) if check is not None and value is not None else None
            if why:
                out.append(Problem(key, f"{where}; {why}"))
        if not out:
            merged = {**cls.defaults(), **values}
            out += [
                Problem("", f"workload {cls.WORKLOAD}: {why}")
                for rule in cls.RULES
                if (why := rule(merged))
            ]
        return out

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None = None) -> Any:
        """The typed arguments: defaults updated with ``values``.

        Raises:
            ArgError: :meth:`problems` found any (all of them listed).
        """
        values = dict(values or {})
        problems = cls.problems(values)
        if problems:
            raise ArgError(problems)
        return cls(**values)

    @classmethod
    def rows(cls) -> list[ArgRow]:
        """One documentation row per argument (for a docs generator or ``--help`` text)."""
        hints = cls._hints()
        return [
            ArgRow(
                name=f.name,
                type=_type_name(hints[f.name]),
                default=json.dumps(f.metadata["default"]),
                unit=f.metadata["unit"],
                doc=f.metadata["doc"],
            )
            for f in dataclasses.fields(cls)
        ]

    def to_dict(self) -> dict[str, Any]:
        """All arguments as a plain JSON-able dict (what travels to Ray Train workers)."""
        return dataclasses.asdict(self)


# ------------------------------------------------------------------------------------- binding


@dataclass(frozen=True)
class JobContext:
    """What the platform running a job provides (GKE RayJob or ``raygke local run``); each value
    reaches the workload only if its arguments have a field of that name, and only where not
    None.

    Attributes:
        dataset: the dataset folder (prepare writes it, trainers and evaluate read it).
        storage_path: the checkpoints root.
        name: the run name (trainers write, evaluate reads ``<storage_path>/<name>``).
        scaling: ``ray.train.ScalingConfig`` kwargs of the target node pool / TPU slice.
        max_failures: the job's restart budget.
        peak_flops_per_device: the catalog's peak FLOP/s of one accelerator (for MFU).
        data: the corpus URI (prepare).
        checkpoint: the checkpoint to evaluate (or to run batch inference with).
        artifacts: the artifacts root (batch inference writes its outputs under it).
    """

    dataset: str | None = None
    storage_path: str | None = None
    name: str | None = None
    scaling: Mapping[str, Any] | None = None
    max_failures: int | None = None
    peak_flops_per_device: float | None = None
    data: str | None = None
    checkpoint: str | None = None
    artifacts: str | None = None


def bind(
    cls: type[WorkloadArgs], context: JobContext, args: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The arguments of one job: the ``context`` values the workload takes, then the job's own
    ``args`` on top (an explicit argument always wins). Defaults are not filled in (the
    workload's entrypoint merges them).

    Raises:
        ArgError: the resulting arguments do not fit the workload's dataclass.
    """
    accepted = set(cls.names())
    out = {
        k: (dict(v) if isinstance(v, Mapping) else v)
        for k, v in ((f.name, getattr(context, f.name)) for f in dataclasses.fields(context))
        if v is not None and k in accepted
    }
    out.update(args or {})
    problems = cls.problems(out)
    if problems:
        raise ArgError(problems)
    return out
