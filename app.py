"""ldpviz dashboard — Explore (landing page)."""

import streamlit as st

from ldpviz import Grid, datasets, viz

st.set_page_config(page_title="ldpviz — Explore", layout="wide")


@st.cache_data(show_spinner="Loading the dataset ...")
def true_density(name: str, side: int):
    data = datasets.load(name)
    grid = Grid(data.default_region, side)
    binned = grid.bin_lonlat(data.lon, data.lat)
    return data, grid, grid.histogram(binned.cells) / max(len(binned.cells), 1), binned.n_outside


st.title("ldpviz — private location data, visualised")
name = st.sidebar.selectbox("Dataset", datasets.names())
side = st.sidebar.slider("Grid side d", 4, 128, 32)
data, grid, density, outside = true_density(name, side)
st.caption(f"{data.label}: {data.n:,} points; region side {grid.region.side_m / 1000:.1f} km, "
           f"{grid.cell_m:,.0f} m cells. {outside:,} points outside the region.")
st.pydeck_chart(viz.density_deck(grid, density))
