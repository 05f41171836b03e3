"""Paper tables as lists of cells: each cell names its paper coordinates and the RunConfigs
(one per seed, per profile) that reproduce it. Notebooks call these; the run store runs them."""
