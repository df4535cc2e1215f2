"""The check catalogue, registered in the order its checks appear in a verdict (after the built-ins of
scoring/checks/registry.py). Importing this module is what registers them; docs/checks.md documents each.

The order of the imports below is the order of the checks in every verdict, so they are not sorted.
"""

from __future__ import annotations

# isort: off
from scoring.checks import _schema_check  # noqa: F401  schema
from scoring.checks import _rules  # noqa: F401  argument_rules
from scoring.checks import _counts  # noqa: F401  calls, expect_no_tool_calls, expect_tool_call
from scoring.checks import _trajectory  # noqa: F401  trajectory, before
from scoring.checks import _parallel  # noqa: F401  parallel
from scoring.checks import _requests_check  # noqa: F401  require_executions_for_requests
from scoring.checks import _results  # noqa: F401  results, result_shape
from scoring.checks import _flows_check  # noqa: F401  flows
from scoring.checks import _idempotent  # noqa: F401  idempotent_writes
from scoring.checks import _state  # noqa: F401  state
# isort: on
