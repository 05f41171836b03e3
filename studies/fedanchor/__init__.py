"""FedAnchor's investigations: why its selected samples fall (anchor_geometry.py, a replay of published runs)."""
