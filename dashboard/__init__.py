"""The dashboard's own package: everything the pages in ``pages/`` need beyond ``core`` (the engine).

- ``state``: the Streamlit glue (session and address state, the engine's results cached per loaded comparison, the
  judge's run, the sidebar, user text kept inert); the only module here that imports Streamlit.
- ``loading``: an upload or the built-in demo read into a comparison, kept on disk so a link reopens it.
- ``csv_columns``: an uploaded CSV's columns, the guess of which holds what, the turn separator, a preview.
- ``tables``: the per-example table, the verdict and its drivers, slices and drill-down rows as display tables.
- ``correlations``: metrics against human scores, turn-level and system-level.
- ``judging``: the A/B judge page's helpers (votes from human scores, the re-fit's learning curve).
- ``vote_store``: votes given in place, kept per comparison.
- ``exports``: CSV and JSONL downloads.

Numbers come from ``core`` (the engine scores, ``core.verdict`` decides, ``core.engine.estimate_work`` says how long
the rest should take); nothing here changes them.
"""
