"""The serving side (LLM serving results), apart from kernel runs: its tables, the step from export
rows to their columns, writing them, and recomputing their keys."""
