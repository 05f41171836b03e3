"""fssl_core: reproducible federated semi-supervised learning (FedSiam, FedMix, FedAnchor)."""

# Part of every run's identity: bump it when a change alters what a run computes, so that
# results cached under the old version are not read back as if they came from the new code.
__version__ = "0.1.0"
