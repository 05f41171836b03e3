"""FedMix's investigations: the arms that split its gap to SL (arms.py), its pseudo-labels instrumented step by step
(diagnose.py), and Fig. 8's runs trained without a notebook (train_fig8.py)."""
