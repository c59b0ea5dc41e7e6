"""The stack as a whole, the assembly that stands on every concept: the top-level model
(:mod:`.model`, ``StackConfig``), the one resolver (:mod:`.resolve`) and the plan (:mod:`.plan`),
the cross-field rules table (:mod:`.rules`), the loader (:mod:`.loader`, :mod:`.overrides`), the
rendered-stack checks (:mod:`.checks`, :mod:`.name_checks`), the derived names (:mod:`.naming`),
the outputs, the stack reference and the Pulumi config reader (:mod:`.component`).

The package imports nothing: callers import from the module that holds a name
(``from components.stack.model import StackConfig``, ``from components.stack.loader import
load_stack_file``). What every concept stands on (``Problem``, the model base, the stack's own
names, the CRD checker) is the kernel, :mod:`components.kernel`; the floors are the layer table of
tests/test_imports.py.
"""
