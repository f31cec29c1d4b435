"""Central-DP heatmaps (dp-heatmaps-sparse-emd.md): the pyramid-based dp-heatmap and the Laplace
baselines, with the quadtree pyramid they share.
"""
