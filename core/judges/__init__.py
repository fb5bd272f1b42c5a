"""Pairwise judges, registered with ``core.scoring.register_judge``: the learned A/B judge (``pairwise``),
its SmolLM2 reader, preference pairs and votes, and the re-fit on a user's own votes."""
