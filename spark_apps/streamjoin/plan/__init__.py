"""SQL text -> logical plan (no Spark here)."""

from streamjoin.plan.analyzer import analyze
from streamjoin.plan.explain import explain_json, explain_text

__all__ = ["analyze", "explain_text", "explain_json"]
