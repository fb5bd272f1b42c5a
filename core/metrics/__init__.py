"""The metrics, one file per family, inference only (their training is in ``core/training/``).

Each module registers its metrics with ``core.scoring.register_metric``; ``core.scoring`` imports every
module of this package the first time the registry is asked for a name. ``crs`` holds the correlation
re-scaling arithmetic that MME-CRS uses (no metric of its own).
"""
