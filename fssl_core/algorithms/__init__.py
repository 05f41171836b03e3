"""Registry of algorithms by name: a new method is a new file plus one line here."""
from .base import Algorithm
from .fedavg import FedAvg, FedAvgPlus

ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls for cls in (FedAvg, FedAvgPlus)
}
