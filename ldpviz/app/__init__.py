"""Shared page code of the Streamlit dashboard (state, URL, sidebar, cached compute)."""
