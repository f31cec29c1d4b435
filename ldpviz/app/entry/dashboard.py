"""The script ``ldpviz app`` hands to ``streamlit run`` (alone in its folder: Streamlit puts the
script's folder on sys.path, and nothing else should be importable from there)."""

from ldpviz.app.router import main

main()
