"""Training cases: a few optimizer steps on both sides, compared step by step."""
