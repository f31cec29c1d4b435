"""The Disk Area Mechanism family (dam-disk-area-mechanism.md): DAM, DAM-NS and HUEM with their disk
kernels, MDSW (square wave), the Geo-I baselines (planar Laplace, SEM-Geo-I) and the paper's local
privacy (LP) measure.
"""
