"""Notebook explorers: the FedSiam tau curve and the Dirichlet-mu partition, drawn live as their controls move
(widgets.py; ipywidgets where installed)."""
