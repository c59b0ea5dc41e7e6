#!/usr/bin/env bash
# The deploy's disruption gate: plan STACK from BASE to HEAD with `raygke diff --exit-code` and
# refuse a plan that stops or restarts running work (exit 4: a RayJob re-run, a RayCluster whose
# pods are recreated, a node pool drained...) unless APPROVED is "true" (the workflow_dispatch
# input approve_disruption). Exit 0: no change or non-disruptive changes (or approved); any other
# exit of raygke diff (2 usage, 3 internal, 5 a side cannot be rendered: an invalid stack) fails.
# Env: STACK (required), BASE (git revision; empty or all zeros: HEAD~1), APPROVED,
# RAYGKE (default .venv/bin/raygke), PLAN (where the markdown plan goes, default plan-$STACK.md).
set -u
: "${STACK:?STACK is required}"
RAYGKE="${RAYGKE:-.venv/bin/raygke}"
BASE="${BASE:-}"
if [ -z "$BASE" ] || [ -z "${BASE//0/}" ]; then BASE="HEAD~1"; fi
PLAN="${PLAN:-plan-$STACK.md}"
"$RAYGKE" diff --stack "$STACK" --base "$BASE" --head HEAD --format markdown --exit-code >"$PLAN"
rc=$?
cat "$PLAN"
[ -n "${GITHUB_STEP_SUMMARY:-}" ] && cat "$PLAN" >>"$GITHUB_STEP_SUMMARY"
case "$rc" in
  0) echo "disruption gate ($STACK): no changes"; exit 0 ;;
  1) echo "disruption gate ($STACK): changes, none disruptive"; exit 0 ;;
  4)
    if [ "${APPROVED:-false}" = "true" ]; then
      echo "disruption gate ($STACK): disruptive plan, approved (approve_disruption: true)"
      exit 0
    fi
    echo "::error::disruption gate ($STACK): the plan stops or restarts running work (see the" \
      "disruption lines above). Re-run this workflow from the Actions tab (Run workflow) with" \
      "approve_disruption: true to deploy it."
    exit 1 ;;
  *) echo "::error::disruption gate ($STACK): raygke diff failed (exit $rc)"; exit "$rc" ;;
esac
