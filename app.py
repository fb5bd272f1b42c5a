"""dialeval dashboard: the router.

    streamlit run app.py

The pages are plain scripts in ``views/`` that draw (the home page with the one-line verdict, Upload, Scores,
A/B judge, Correlation, Leaderboard); the Streamlit glue (session state, cached results, the sidebar, the address
that reopens a comparison) is ``dashboard/state.py``, and the tables, uploads, votes and time estimates are the
other modules of the ``dashboard`` package; every number comes from ``core``. User text is only ever shown with
``st.text``, inside data frames, or escaped (``state.plain``). The folder is not called ``pages/``: while no run of
this router has called ``st.navigation`` in the server's process, Streamlit treats a ``pages/`` folder as a
multipage app of its own, so a link to a page opened first after a start ran that page without this router (a
navigation of file names, "app" first, no sidebar, nothing loaded; measured with Streamlit 1.67, docs/dashboard.md).
"""
from __future__ import annotations

import streamlit as st

from dashboard import state

# ⚖️ drawn as Streamlit's frontend draws an emoji page icon, given as an ASCII data: URL (the emoji percent-encoded):
# an emoji itself makes set_page_config load Streamlit's emoji catalog first (0.1-0.2 s of a first visit). Nothing is
# fetched from another host (a Material icon would be: from fonts.gstatic.com).
PAGE_ICON = ("data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 100 100'>"
             "<text y='.9em' font-size='90'>%E2%9A%96%EF%B8%8F</text></svg>")
st.set_page_config(page_title="dialeval", page_icon=PAGE_ICON, layout="wide")

# Streamlit's "auto" sidebar collapses only at 768 px and below: at 800 px it kept 300 px of the window. Below
# NARROW_PX the sidebar starts collapsed: FOLD_SIDEBAR clicks Streamlit's own collapse button once the sidebar is
# drawn, and again when a resize or a redraw opens it, unless the user has opened or closed it themselves (Streamlit
# keeps that choice in the browser's localStorage; the script forgets the choice its own click stores, so a wider
# window opens the sidebar again). The "»" button at the top left opens it. The element sits at the top of the
# sidebar, not of the page: until its code has loaded Streamlit draws a placeholder in its place, which pushed the
# page's title down for a second. FOLD_CSS then hides the layout wrapper around .st-key-fold_sidebar, so it takes
# no room, not even the gap between elements. (No bare strings in this file: Streamlit's "magic" would draw them.)
NARROW_PX = 1000
FOLD_CSS = '<style>[data-testid="stLayoutWrapper"]:has(> .st-key-fold_sidebar) { display: none; }</style>'
FOLD_SIDEBAR = """<script>
(() => {
  if (window.__dialevalFoldSidebar) return;  // once per page load; the router's every run redraws this element
  window.__dialevalFoldSidebar = true;
  const NARROW = %d, KEY = 'stSidebarCollapsed-';
  const chosen = () => Object.keys(localStorage).filter(k => k.startsWith(KEY));
  const fold = () => {
    if (window.innerWidth >= NARROW) return;
    const side = document.querySelector('[data-testid="stSidebar"]');
    const button = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
    if (!side || side.dataset.collapsed !== 'false' || !button || chosen().length) return;
    button.click();
    chosen().forEach(k => localStorage.removeItem(k));  // the click stores a choice the user did not make
  };
  new MutationObserver(fold).observe(document.body, {subtree: true, childList: true, attributes: true,
                                                     attributeFilter: ['data-collapsed']});
  window.addEventListener('resize', fold);
  fold();
})();
</script>""" % NARROW_PX
with st.sidebar.container(key="fold_sidebar"):
    st.markdown(FOLD_CSS, unsafe_allow_html=True)  # markdown draws at once; st.html first loads its code
    st.html(FOLD_SIDEBAR, unsafe_allow_javascript=True)
state.route(st.navigation([
    st.Page(state.PAGES["home"], title="Home", icon=":material/home:", default=True),
    st.Page(state.PAGES["upload"], title="Upload", icon=":material/upload:"),
    st.Page(state.PAGES["scores"], title="Scores", icon=":material/table:"),
    st.Page(state.PAGES["judge"], title="A/B judge", icon=":material/balance:"),
    st.Page(state.PAGES["correlation"], title="Correlation", icon=":material/scatter_plot:"),
    st.Page(state.PAGES["leaderboard"], title="Leaderboard", icon=":material/leaderboard:")]))
