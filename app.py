"""ldpviz dashboard: the router. Every page lives in views/ (Explore is the landing page).

Not in pages/: Streamlit auto-discovers that folder, and a link straight to a page would then
open with its own file-name navigation instead of this one. Every page runs through
dashboard.errors.run_page, so nothing unexpected reaches the user as a traceback.
"""

import streamlit as st

from dashboard import errors, session

# The favicon is set once here, served by this server. No page icons: Streamlit makes a Material icon the
# page's favicon and fetches it from a third-party host.
st.set_page_config(page_title="ldpviz", page_icon=session.PAGE_ICON, layout="wide")
PAGES = [
    st.Page("views/0_Explore.py", title="Explore", default=True),
    st.Page("views/1_Compare.py", title="Compare", url_path="Compare"),
    st.Page("views/2_Trade-offs.py", title="Trade-offs", url_path="Trade-offs"),
    st.Page("views/3_Mechanisms.py", title="Mechanisms", url_path="Mechanisms"),
    st.Page("views/4_Data.py", title="Data", url_path="Data"),
    st.Page("views/5_Privacy_audit.py", title="Privacy audit", url_path="Privacy_audit"),
    st.Page("views/6_Flows.py", title="Flows", url_path="Flows"),
    st.Page("views/7_People.py", title="People", url_path="People"),
]
errors.run_page(st.navigation(PAGES))
