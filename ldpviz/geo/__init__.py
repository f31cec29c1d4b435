"""Where things are: Region (a lon/lat box projected to planar metres), Grid (d x d cells), binning,
the partitions an estimate lives on, public map tiles (quadkeys) and how a region is chosen.

Imports only :mod:`ldpviz.errors`.
"""
