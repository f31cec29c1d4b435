"""People with many locations: trajectory mechanisms (DAM per point or per person, LDPTrace) and
user-level heatmaps (privacy unit: one person).
"""
