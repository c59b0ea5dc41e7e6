"""The kernel every concept folder stands on, and which imports no concept (only
:mod:`components.catalog` and :mod:`contract`): the pydantic model base, bounds and
``StackConfigError`` (:mod:`.base`), ``Problem`` and ``Rule`` (:mod:`.problems`), the stack's own names
(:mod:`.names`), the key hints (:mod:`.hints`), the stack file reader (:mod:`.stackyaml`), the
parse cache (:mod:`.yamlcache`) and the CRD checker with its CEL rules (:mod:`.crdschema`,
:mod:`.crdcel`). The assembly of every concept is :mod:`components.stack`; the floors are the
layer table of tests/test_imports.py.
"""
