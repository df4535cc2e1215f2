"""The check catalogue, registered in the order its checks appear in a verdict (after the built-ins of
scoring/checks/registry.py). Importing this module is what registers them; docs/checks.md documents each.

The order of the imports below is the order of the checks in every verdict, so they are not sorted.
"""

from __future__ import annotations

# isort: off
from scoring.checks import _schema_check  # schema
from scoring.checks import _rules  # argument_rules
from scoring.checks import _counts  # calls, expect_no_tool_calls, expect_tool_call
from scoring.checks import _trajectory  # trajectory, before
from scoring.checks import _parallel  # parallel
from scoring.checks import _requests_check  # require_executions_for_requests
from scoring.checks import _results  # results, result_shape
from scoring.checks import _flows_check  # flows
from scoring.checks import _idempotent  # idempotent_writes
from scoring.checks import _state  # state
from scoring.checks import registry
# isort: on

# A module above imported on its own before this one (a test of it, a user's code reading it) registered
# its checks early, out of the verdict's order; importing `scoring` no longer imports this module first
# (its names load when read: issue 33). So the order is settled here, by the module that registered each
# check: the built-ins, the catalogue's modules in the order above, then any other check as registered.
registry.settle_order(
    [
        registry.__name__,
        *(
            module.__name__
            for module in (
                _schema_check,
                _rules,
                _counts,
                _trajectory,
                _parallel,
                _requests_check,
                _results,
                _flows_check,
                _idempotent,
                _state,
            )
        ),
    ]
)
