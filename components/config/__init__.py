"""The config floor: the stack file as typed data. ``StackConfig`` (:mod:`.stack`) and the
concept models it composes, one module per concept (:mod:`.capacity`, :mod:`.cluster`,
:mod:`.computeclass`, :mod:`.gcsft`, :mod:`.images`, :mod:`.kuberay`, :mod:`.network`,
:mod:`.nodepools`, :mod:`.raycrs`, :mod:`.serve`, :mod:`.storage`), the release epochs of the
defaults (:mod:`.epochs`), the deprecated keys (:mod:`.deprecations`), the per-stack overrides
(:mod:`.overrides`) and the stack file reference (:mod:`.reference`).

Stands on :mod:`components.kernel`, :mod:`components.catalog` and :mod:`contract` only (the layer
table of tests/test_imports.py). The package imports nothing itself.
"""
