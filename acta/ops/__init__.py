"""The operator surface: ``Operations`` (``app.ops``) and what its verbs return."""

from acta.ops.explanation import Explanation, Verdict
from acta.ops.operations import Operations

__all__ = ["Explanation", "Operations", "Verdict"]
