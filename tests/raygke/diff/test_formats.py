"""raygke/diff/formats.py: the text plan stays readable on a wide change (digest-only changes one
line per resource, at most FIELDS_SHOWN other fields) and ``--full`` lists everything."""

from __future__ import annotations

import io

from rich.console import Console

from raygke.diff.compare import Change, FieldChange, Plan
from raygke.diff.formats import FIELDS_SHOWN, digest_only, render_text

OLD_IMG = "r.pkg.dev/p/ray/ray-cpu@sha256:" + "a" * 64
NEW_IMG = "r.pkg.dev/p/ray/ray-cpu@sha256:" + "b" * 64


def _plan() -> Plan:
    fields = [FieldChange(f"spec.labels.l{i}", "x", "y") for i in range(FIELDS_SHOWN + 3)]
    fields += [
        FieldChange("spec.template.containers[0].image", OLD_IMG, NEW_IMG),
        FieldChange(
            "spec.runtimeEnvYAML.working_dir",
            "gs://b/w/0123456789abcdef.zip",
            "gs://b/w/fedcba9876543210.zip",
        ),
        FieldChange("spec.cluster", "a", "b", forces_replacement=True),
    ]
    change = Change("urn:x", "kubernetes:ray.io/v1:RayJob", "train", "replace", fields)
    return Plan("dev", "HEAD", "working tree", [change], unchanged=3)


def _text(full: bool) -> str:
    out = io.StringIO()
    render_text(_plan(), Console(file=out, width=300), full=full)
    return out.getvalue()


def test_digest_only_is_a_change_in_hex_digests_alone() -> None:
    assert digest_only(FieldChange("image", OLD_IMG, NEW_IMG))
    assert not digest_only(FieldChange("image", OLD_IMG, NEW_IMG.replace("/ray/", "/ml/")))
    assert not digest_only(FieldChange("replicas", 1, 2))


def test_a_wide_change_is_summarised_per_resource() -> None:
    text = _text(full=False)
    assert 'spec.cluster: "a" => "b" (forces replacement)' in text  # always shown
    assert text.count("spec.labels.l") == FIELDS_SHOWN - 1  # the forced one takes a slot
    assert "2 digest-only changes (image, working_dir; --full lists them)" in text
    assert "... and 4 more changed fields (--full lists them)" in text
    assert "sha256:aaaa" not in text


def test_full_lists_every_field() -> None:
    text = _text(full=True)
    assert text.count("spec.labels.l") == FIELDS_SHOWN + 3
    assert OLD_IMG in text and "fedcba9876543210" in text
    assert "--full" not in text
