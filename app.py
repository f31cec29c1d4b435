"""ldpviz dashboard from a checkout: ``streamlit run app.py`` (installed: ``ldpviz app``).

The router and pages live in the package (:mod:`ldpviz.app.router`, ``ldpviz/app/views/``).
"""

from ldpviz.app.router import main

main()
