"""The ``compute_classes`` stack key (:class:`ComputeClassConfig`): one GKE custom ComputeClass per
accelerator shape, naming a declared TPU or GPU node pool and the ``fallback`` capacity GKE tries
after it. Pure pydantic; the rules are :mod:`components.computeclass.rules`, the render
:mod:`components.computeclass.render`. Sources: docs/sources.md#config-computeclass
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from components import catalog

Fallback = Literal["reservation", "on-demand", "flex-start", "spot"]
FALLBACKS: tuple[str, ...] = ("reservation", "on-demand", "flex-start", "spot")

# The class name is the value of the node label ``cloud.google.com/compute-class`` and a
# cluster-scoped object name: a DNS-1123 label (at most 63 characters,
# https://kubernetes.io/docs/concepts/overview/working-with-objects/names/).
_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
NAME_MAX = 63
# Flex-start VMs run at most seven days (maxRunDurationSeconds 604800 in accelerated-platforms'
# "DWS FlexStart with 7 day limit" priorities; https://cloud.google.com/kubernetes-engine/docs/
# concepts/dws).
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600

# The node label a pod selects a class by, and the taint of the class's nodes
# (``cloud.google.com/compute-class=<name>:NoSchedule``): GKE puts both on the nodes it creates
# for a class; declared node pools that are a priority of the class carry them too
# (https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes).
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"


def class_label(name: str) -> dict[str, str]:
    """The node label (and the pods' nodeSelector) of compute class ``name``."""
    return {COMPUTE_CLASS_LABEL: name}


def class_taint(name: str) -> catalog.Taint:
    """The taint of the nodes of compute class ``name``."""
    return catalog.Taint(COMPUTE_CLASS_LABEL, name)


class ComputeClassConfig(BaseModel):
    """A GKE custom ComputeClass for one TPU or GPU pool: the pool's own nodes first, then the
    ``fallback`` capacity in order, each a ``spec.priorities`` entry with the pool's shape."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)

    name: str = Field(
        description="ComputeClass name (cluster-scoped object, and the value of the node label "
        "`cloud.google.com/compute-class` worker groups select): a DNS label, 1-63 lowercase "
        "letters, digits and hyphens.",
    )
    node_pool: str = Field(
        description="A declared TPU or GPU node pool: its shape (slice or GPU machine) is every "
        "priority's shape, its GKE node pools are the first priority (they get the class's node "
        "label and taint), every unqueued worker group on it selects the class, and its "
        "Kueue flavor, when a cluster queue lists it, selects the class instead of the pool "
        "(queued pods get the class from Kueue on admission). Not a `provisioning: queued` pool.",
    )
    fallback: list[Fallback] = Field(
        default_factory=lambda: ["on-demand", "spot"],
        description="Capacity GKE tries after the pool's own nodes, in order: `reservation` "
        "(the specific `reservation`), `on-demand`, `flex-start` (DWS flex-start VMs), `spot`; "
        "each becomes one `spec.priorities` entry "
        "(https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass). Empty: "
        "the pool's nodes only.",
    )
    reservation: str | None = Field(
        None,
        description="Name of the specific Compute Engine reservation of the `reservation` "
        "priority (`reservations: {affinity: Specific}`); required with it, refused without.",
    )
    max_run_duration_seconds: int | None = Field(
        None,
        ge=60,
        le=FLEX_START_MAX_RUN_SECONDS,
        description="`maxRunDurationSeconds` of the `flex-start` priority (60 to 604800, seven "
        "days); only with `flex-start` in `fallback`. Unset: GKE's default.",
    )
    node_pool_auto_creation: bool = Field(
        True,
        description="`nodePoolAutoCreation.enabled`: GKE may create node pools for the fallback "
        "priorities; required when `fallback` is not empty (the fallbacks are nodes GKE creates).",
    )
    active_migration: bool = Field(
        False,
        description="`activeMigration.optimizeRulePriority`: GKE moves the class's pods to a "
        "higher priority when its capacity frees up (a restart of the Ray pods it moves).",
    )
    when_unsatisfiable: Literal["DoNotScaleUp", "ScaleUpAnyway"] = Field(
        "DoNotScaleUp",
        description="`whenUnsatisfiable`: with no priority available, `DoNotScaleUp` keeps the "
        "pods pending; `ScaleUpAnyway` lets GKE create other nodes.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if len(v) > NAME_MAX or not _NAME.match(v):
            raise ValueError(
                f"compute class name {v!r} is not a DNS label: 1-{NAME_MAX} lowercase letters, "
                "digits and hyphens, starting with a letter and not ending with a hyphen"
            )
        return v

    @model_validator(mode="after")
    def _fallback(self) -> ComputeClassConfig:
        seen = [f for i, f in enumerate(self.fallback) if f in self.fallback[:i]]
        if seen:
            raise ValueError(
                f"fallback lists {', '.join(sorted(set(seen)))} twice; each capacity type once"
            )
        if "reservation" in self.fallback and not self.reservation:
            raise ValueError("fallback 'reservation' needs reservation: <reservation name>")
        if self.reservation and "reservation" not in self.fallback:
            raise ValueError(
                f"reservation {self.reservation!r} is set but fallback has no 'reservation'; "
                "add it where GKE should try the reservation"
            )
        if self.max_run_duration_seconds is not None and "flex-start" not in self.fallback:
            raise ValueError(
                "max_run_duration_seconds applies to the flex-start priority; add 'flex-start' "
                "to fallback or unset it"
            )
        if self.fallback and not self.node_pool_auto_creation:
            raise ValueError(
                f"fallback {self.fallback} needs node_pool_auto_creation: true: the fallback "
                "priorities are node pools GKE creates for the class "
                "(nodePoolAutoCreation, https://cloud.google.com/kubernetes-engine/docs/"
                "reference/crds/computeclass)"
            )
        return self
