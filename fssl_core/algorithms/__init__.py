"""Registry of algorithms by name: a new method is a new file plus one line here."""
from .base import Algorithm
from .fedanchor import FedAnchor
from .fedavg import FedAvg, FedAvgPlus
from .fedcon import FedCon
from .fedfixmatch import FedFixMatch
from .fedmatch import FedMatch
from .fedmix import FedMix, SupervisedAtServer
from .fedsem import FedSem
from .fedsiam import FedSiam, FedSiamMT, FedSiamNoSiam, FedSiamPi
from .semifl import SemiFL, SupervisedFL

ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls for cls in (FedAvg, FedAvgPlus, FedSiam, FedSiamPi, FedSiamMT, FedSiamNoSiam, FedSem, FedFixMatch, FedMatch,
                FedMix, SupervisedAtServer, SemiFL, SupervisedFL, FedAnchor, FedCon)
}
