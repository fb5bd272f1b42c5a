"""dialeval dashboard: the router.

    streamlit run app.py

The pages are plain scripts in ``views/`` that draw (the home page with the one-line verdict, Upload, Scores,
A/B judge, Correlation, Leaderboard); the Streamlit glue (session state, cached results, the sidebar, the address
that reopens a comparison) is ``views/state.py``; every number comes from ``core``. User text is only ever shown
with ``st.text``, inside data frames, or escaped (``state.plain``). The folder is not called ``pages/``: Streamlit
would then also run its files as pages of its own, without this router (a second navigation listing "app" and
"state", and a sidebar that says nothing is loaded).
"""
from __future__ import annotations

import streamlit as st

from views import state

st.set_page_config(page_title="dialeval", page_icon="⚖️", layout="wide")
state.route(st.navigation([
    st.Page(state.PAGES["home"], title="Home", icon=":material/home:", default=True),
    st.Page(state.PAGES["upload"], title="Upload", icon=":material/upload:"),
    st.Page(state.PAGES["scores"], title="Scores", icon=":material/table:"),
    st.Page(state.PAGES["judge"], title="A/B judge", icon=":material/balance:"),
    st.Page(state.PAGES["correlation"], title="Correlation", icon=":material/scatter_plot:"),
    st.Page(state.PAGES["leaderboard"], title="Leaderboard", icon=":material/leaderboard:")]))
