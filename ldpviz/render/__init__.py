"""Figures without Streamlit: pydeck layers and plotly figures, PNG maps, OD flow maps and exports.
"""
