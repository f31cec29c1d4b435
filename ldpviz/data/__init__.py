"""What the users are: bundled and synthetic point datasets, uploaded files (small and big, CSV and
Parquet), trajectories (people with many locations) and DAM App. D's trajectory generator.
The bundled files (``*.parquet``) live in this folder.

Imports :mod:`ldpviz.geo`.
"""
