"""A Flower Datasets partitioner as a partition of fssl's training set: `flwr_datasets` (labels at the clients).

    RunConfig(partition="flwr_datasets", clients=100, seed=42, labeled_ratio=0.1,
              flwr_partitioner="DirichletPartitioner(partition_by='label', alpha=0.5)")

`flwr_partitioner` is the partitioner's constructor call as text (a class of `flwr_datasets.partitioner`, its
arguments by keyword, each a literal), so that it is a RunConfig field, typed on a command line and hashed.
The partitioner is built over the training set as a `datasets.Dataset` whose "label" column (a ClassLabel of
num_classes) holds fssl's labels in fssl's order: client k's samples are the rows of its `load_partition(k)`,
sorted. Each client then labels round(γ·n_k) random samples of its own, as client_dirichlet does
(constructions.label_within), and may stream the rest (stream_parts).

Reading choices, and why:
- num_partitions is the run's `clients`, the partitioner's seed the run's `seed`: one knob each, as for every
  fssl partition (seeds 0..n-1 draw n partitions). The text may state them at those values only, so that a
  Flower call copied as it is runs; `partitioner_identity` leaves them out, `clients` and `seed` hash them.
- partition_by is 'label', the one column; a partitioner's `shuffle` orders rows within a partition, which
  fssl sorts: it would change the run id and nothing else, so it is refused, as an unread field is.
- The identity reads the call's class and arguments, not its characters ("alpha=.5" is "alpha=0.5"). The
  defaults of arguments left out are flwr-datasets': a release changing one changes the run under one id.
- fssl's labeled draw takes a child stream of the seed (SeedSequence.spawn), not the stream the
  partitioner draws from default_rng(seed).
- Every client gets a row, no row goes to two clients (a vertical partitioner is refused); a row no client
  gets (ShardPartitioner's incomplete shard) is not trained on.
"""
from __future__ import annotations

import ast
import inspect
import json
from dataclasses import dataclass

import numpy as np

from ...config import setting
from .checks import PartitionError, check_clients, check_fraction, check_int, check_labels, check_stream_parts, where_of
from .constructions import EMPTY, finalize, label_within
from .declaration import EveryPartition, PartitionDeclaration
from .splits import Partition

NAME = "flwr_datasets"
EXAMPLE = "DirichletPartitioner(partition_by='label', alpha=0.5)"
LABEL = "label"           # the training set's column the partitioner may read (partition_by)
ROW = "row"               # each row's index in the training set, read back from a client's rows
RUN_KNOBS = ("num_partitions", "seed", "partition_by")   # stated by the run, left out of the identity


def read_call(text: str) -> tuple[str, dict]:
    """(class name, keyword arguments) of the call `text`; PartitionError, naming flwr_partitioner, otherwise."""
    def refuse(problem):
        return PartitionError(f"flwr_partitioner={text!r}: {problem}; e.g. \"{EXAMPLE}\"")

    try:
        call = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise refuse("must be a Flower Datasets partitioner's constructor call") from None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise refuse("must be a call of a class of flwr_datasets.partitioner, by its name")
    if call.args or any(keyword.arg is None for keyword in call.keywords):
        raise refuse("give every argument by keyword")
    arguments = {}
    for keyword in call.keywords:
        try:
            value = ast.literal_eval(keyword.value)
        except ValueError:
            raise refuse(f"{keyword.arg}={ast.unparse(keyword.value)} must be a literal (a number, a string, "
                         "True, False, None or a list of them)") from None
        if not _plain(value):
            raise refuse(f"{keyword.arg}={value!r} must be a number, a string, True, False, None or a list of them")
        arguments[keyword.arg] = value
    return call.func.id, arguments


def _plain(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def check_call(text: str, num_clients: int, seed: int, names: tuple[str, str] = ("num_clients", "seed")):
    """`read_call(text)`, refusing what the run states otherwise (`names`: how the caller calls the clients'
    number and the seed): num_partitions other than num_clients, seed other than seed, partition_by other
    than 'label', and shuffle. A PartitionError's message starts with flwr_partitioner=..."""
    cls, arguments = read_call(text)
    clients_name, seed_name = names
    stated = {"num_partitions": (num_clients, clients_name), "seed": (seed, seed_name)}
    for param, (value, field) in stated.items():
        if param in arguments and arguments[param] != value:
            raise PartitionError(f"flwr_partitioner={text!r}, {field}={value!r}: its {param}={arguments[param]!r} "
                                 f"must be {field}={value!r}, the run's; leave {param} out or give "
                                 f"{field}={arguments[param]!r}")
    if arguments.get("partition_by", LABEL) != LABEL:
        raise PartitionError(f"flwr_partitioner={text!r}: partition_by={arguments['partition_by']!r} must be "
                             f"{LABEL!r}, the one column of fssl's training set a partitioner reads")
    if "shuffle" in arguments:
        raise PartitionError(f"flwr_partitioner={text!r}: shuffle={arguments['shuffle']!r} orders a client's "
                             "rows, which fssl sorts: it would change the run id and nothing else; leave it out")
    return cls, arguments


def partitioner_identity(text: str) -> str:
    """What the run's identity hashes of `text`: its class and arguments, less what the run states
    (RUN_KNOBS), in one spelling: `DirichletPartitioner(alpha=0.5)` whatever the spaces or order."""
    cls, arguments = read_call(text)
    kept = {k: v for k, v in sorted(arguments.items()) if k not in RUN_KNOBS}
    return cls + "(" + ",".join(f"{k}={json.dumps(v)}" for k, v in kept.items()) + ")"


def flwr_datasets_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                            flwr_partitioner: str, labeled_ratio: float, stream_parts: int = 1) -> Partition:
    """The clients of the Flower Datasets partitioner `flwr_partitioner` over the training set, γ of each
    labeled (module docstring)."""
    name = NAME
    where = where_of(name)
    labels = check_labels(name, labels, num_classes)
    check_clients(name, num_clients, labels.size)
    check_fraction(name, 'labeled_ratio', labeled_ratio)
    check_int(where, 'seed', seed, 0)
    check_stream_parts(name, stream_parts)
    if not isinstance(flwr_partitioner, str):
        raise PartitionError(f"{where}: flwr_partitioner={flwr_partitioner!r} must be a partitioner's call as "
                             f"text, e.g. \"{EXAMPLE}\"")
    try:
        cls, arguments = check_call(flwr_partitioner, num_clients, seed)
    except PartitionError as err:
        raise PartitionError(f"{where}: {err}") from None
    clients = flower_clients(labels, num_classes, num_clients, seed, cls, arguments, flwr_partitioner)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)).spawn(1)[0])
    splits = label_within(clients, np.full(num_clients, labeled_ratio), rng)
    return finalize(name, EMPTY, splits, stream_parts, rng)


def flower_clients(labels, num_classes, num_clients, seed, cls, arguments, text) -> list[np.ndarray]:
    """Each partition's rows of the training set, sorted, as the partitioner `cls(**arguments)` gives them."""
    where = f"{where_of(NAME)}: flwr_partitioner={text!r}"
    try:
        import datasets     # datasets, flwr_datasets: the [flower] extra, absent from a plain install
        from flwr_datasets import partitioner as flower
    except ImportError:
        raise PartitionError(f"{where}: needs Flower Datasets: pip install -e '.[flower]'") from None
    known = sorted(n for n in flower.__all__ if n != "Partitioner")
    if cls not in known:
        raise PartitionError(f"{where}: {cls} must be one of flwr_datasets.partitioner's: {', '.join(known)}")
    params = inspect.signature(getattr(flower, cls)).parameters
    for param, value in arguments.items():
        if param not in params:
            raise PartitionError(f"{where}: {param}={value!r} is not a parameter of {cls}; it takes "
                                 f"{', '.join(params)}")
    given = dict(arguments)
    for param, value in (("num_partitions", num_clients), ("seed", int(seed)), ("partition_by", LABEL)):
        if param in params:
            given[param] = value
    features = datasets.Features({LABEL: datasets.ClassLabel(num_classes=num_classes), ROW: datasets.Value("int64")})
    train = datasets.Dataset.from_dict({LABEL: labels, ROW: np.arange(labels.size)}, features=features)
    try:
        partitioner = getattr(flower, cls)(**given)
        partitioner.dataset = train
        count = partitioner.num_partitions
        if count != num_clients:
            raise PartitionError(f"{where}: makes {count} partitions; num_clients={num_clients} must equal it "
                                 "(each partition is a client)")
        parts = [partitioner.load_partition(k) for k in range(count)]
        if any(ROW not in part.column_names for part in parts):
            raise PartitionError(f"{where}: splits the columns, not the rows; an fssl partition gives each client "
                                 "rows (a vertical partitioner cannot be one)")
        clients = [np.sort(np.asarray(part.with_format("numpy")[:][ROW], dtype=np.int64)) for part in parts]
    except (ValueError, TypeError) as err:     # Flower's own refusals (PartitionError is a ValueError: kept)
        if isinstance(err, PartitionError):
            raise
        said = " ".join(str(err).split())
        # Flower's first sentence says why; what follows may echo a whole array (a Dirichlet's alpha per client)
        first = said.split(". ")[0].rstrip(".") + "."
        raise PartitionError(f"{where}: Flower Datasets refused it: {first}") from None
    for k, rows in enumerate(clients):
        if rows.size == 0:
            raise PartitionError(f"{where}: gives client {k} no row of the {labels.size}; every client needs one")
    every = np.concatenate(clients)
    if np.unique(every).size != every.size:
        raise PartitionError(f"{where}: gives a row to two clients; an fssl partition gives each row to one")
    return clients


@dataclass(frozen=True)
class FlowerCall(EveryPartition):
    flwr_partitioner: str = setting("", doc="partition='flwr_datasets': a Flower Datasets partitioner's call, e.g. "
                                    "\"DirichletPartitioner(partition_by='label', alpha=0.5)\" (data/partition/flower.py)")


def _a_call_the_run_agrees_with(cfg, facts):
    """The partitioner's call reads as one, and states clients, seed and partition_by as the run does
    (check_call); whether flwr-datasets has the class is asked when the run is built."""
    if not cfg.flwr_partitioner:
        return (f"flwr_partitioner='', partition='flwr_datasets': give the Flower Datasets partitioner's call, "
                f"e.g. flwr_partitioner=\"{EXAMPLE}\"")
    try:
        check_call(cfg.flwr_partitioner, cfg.clients, cfg.seed, names=("clients", "seed"))
    except PartitionError as err:
        return str(err)


FLWR_DATASETS = PartitionDeclaration(
    NAME, flwr_datasets_partition, labels_at="client", parameters=FlowerCall,
    doc="a Flower Datasets partitioner's, γ labeled", paper="none (Flower Datasets)",
    example=dict(labeled_ratio=0.1,
                 flwr_partitioner="DirichletPartitioner(partition_by='label', alpha=0.5, min_partition_size=1)"),
    checks=(_a_call_the_run_agrees_with,), normal_forms={"flwr_partitioner": partitioner_identity})
