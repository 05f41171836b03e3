"""Any fssl algorithm as a Flower app: `flwr run flower-app` (the app's pyproject names `server` and `client`).

How a round is split, so that it computes what fssl's engine computes (engine.Federation.run_round):
- The ServerApp claims the run in fssl's run store (a finished run is read back, a started one resumes from
  its checkpoint) and holds its state. Per round, `FsslStrategy.configure_train` runs the server's hooks
  before the round, samples the clients from the (seed, round) stream and sends each its download payload;
  `aggregate_train` puts the uploads back in client order, aggregates, runs the server's hooks after it and
  records the round's row and checkpoint, as the engine's trainer does. The round's test metrics (the global
  model on the test set, at the server, as fssl evaluates) are Flower's server-side evaluate metrics.
- Client k trains on node k mod N (FsslStrategy.place_clients): many clients a node where the federation has
  fewer nodes than clients, as Flower's default federation (2 nodes) has. The ClientApp builds the run's data
  once per process and runs `Federation.train_client`: client k's local training on its own (seed, round,
  client) stream, whichever node it runs on.
- Payloads cross as an ArrayRecord (tensors as they are, nested keys joined by '/', list items by index) and a
  ConfigRecord (numbers that are not tensors, e.g. SemiFL's selection rate; where the lists are, e.g. FedMatch's
  helpers), so each side sees the other's objects.

A Flower client trains alone, one after another: the app's runs are the engine's sequential runs, with the
same run identity and records (env.json's `executor` says "flower"). `flower_trainer` keeps the CLI's default
('auto') where the engine trains clients one by one too, and makes the run `trainer='sequential'`'s where
'auto' would train a cohort; 'cohort' is refused. On CPU every round's metrics and the final state equal the
engine's (tests/test_flower.py). The run's configuration is the app's run config, in Flower's keys
(flower_keys.py); `python -m fssl_core flower` (flower_submit.py) submits it and exits as `run` does.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import torch

from .. import __version__
from ..algorithms.base import Payload, State, Upload
from ..config import AUTO, ConfigError
from ..engine.federation import Federation, payload_bytes, trains_as_cohort
from ..engine.trainer import Tracker
from ..learning.training import Diverged
from ..run_config import RunConfig
from ..store import DIVERGED, OK, RunStore, describe
from ..store.run_store import RunRecorder, RunResult
from .flower_keys import NOT_A_RESULT, REFUSED, code_digest, run_config_of
from .mlflow_track import MlflowTracker

try:
    from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import Strategy
except ImportError:             # pragma: no cover - said once, where it is used
    raise ImportError("fssl_core.integrations.flower needs Flower: pip install -e '.[flower]'") from None

SEP = "/"
EMPTY, SEQUENCES = SEP, SEP * 2             # the ConfigRecord keys of a payload's empty dicts, lists and tuples
EXECUTOR = "flower"
SCALARS = (bool, int, float)
federations: dict[str, Federation] = {}    # run id -> Federation, one per process (its data loaded once)


def federation(cfg: RunConfig) -> Federation:
    if cfg.run_id not in federations:
        if cfg.device == "cpu":       # one thread, as trainer.train_batch trains: a reduction's order is fixed
            torch.set_num_threads(1)
        federations[cfg.run_id] = Federation.build(cfg)
    return federations[cfg.run_id]


# --- payloads as records -------------------------------------------------------------------------------
def pack(payload: Payload) -> tuple[ArrayRecord, ConfigRecord]:
    """A nested payload as an ArrayRecord of its tensors and a ConfigRecord of its numbers (keys joined by
    '/', a list's items keyed by their index), with the paths of its empty dicts under the key EMPTY and
    those of its lists and tuples, with their lengths, under SEQUENCES (keys that no path is: none holds '/')."""
    arrays: dict[str, Array] = {}
    numbers: dict[str, Any] = {}
    empty: list[str] = []
    sequences: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if not node:
                empty.append(path)
            for key, value in node.items():
                if not isinstance(key, str) or SEP in key or not key:
                    raise ValueError(f"payload key {key!r} at {path!r}: a payload's keys are non-empty strings "
                                     f"without {SEP!r}, which the Flower adapter joins keys with")
                walk(value, f"{path}{SEP}{key}" if path else key)
        elif isinstance(node, (list, tuple)) and path:
            sequences.append(f"{path}{SEP}{type(node).__name__}{SEP}{len(node)}")
            for i, value in enumerate(node):
                walk(value, f"{path}{SEP}{i}")
        elif isinstance(node, torch.Tensor):
            arrays[path] = Array.from_torch_tensor(node.detach().cpu())
        elif isinstance(node, SCALARS):
            numbers[path] = node
        else:
            raise TypeError(f"payload {path!r}: a {type(node).__name__}; a payload holds dicts, lists and tuples "
                            "of tensors, bools, ints and floats")

    walk(payload, "")
    numbers[EMPTY], numbers[SEQUENCES] = empty, sequences
    return ArrayRecord(array_dict=arrays), ConfigRecord(numbers)


def unpack(arrays: ArrayRecord, numbers: ConfigRecord, device: torch.device) -> Payload:
    out: Payload = {}

    def node_at(parents: list[str]) -> dict:
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        return node

    def place(path: str, value: Any) -> None:
        *parents, leaf = path.split(SEP)
        node_at(parents)[leaf] = value

    for path in numbers[EMPTY]:
        if path:
            place(path, {})
    for path, value in numbers.items():
        if path not in (EMPTY, SEQUENCES):
            place(path, value)
    for path, array in arrays.items():
        place(path, torch.from_numpy(array.numpy().copy()).to(device))
    # lists and tuples, deepest first, from the dicts their items were placed in under their indices
    for entry in sorted(numbers[SEQUENCES], key=lambda e: e.count(SEP), reverse=True):
        *parts, kind, length = entry.split(SEP)
        *parents, leaf = parts
        holder = node_at(parents)
        items = holder.get(leaf, {})
        sequence = [items[str(i)] for i in range(int(length))]
        holder[leaf] = tuple(sequence) if kind == "tuple" else sequence
    return out


# --- the run's configuration -----------------------------------------------------------------------------
def app_config(run_config: Mapping[str, Any]) -> tuple[RunConfig, RunStore, dict[str, Any]]:
    """The RunConfig, run store and app options (flower_keys.APP_OPTIONS) that a Flower run config (the app's
    defaults fused with the `--run-config` overrides, under Flower's keys: flower_keys.py) names, with the
    trainer this app can run (`flower_trainer`)."""
    cfg, options = run_config_of(run_config)
    return flower_trainer(cfg), RunStore(str(options["runs"]) or None), options


def flower_trainer(cfg: RunConfig) -> RunConfig:
    """`cfg` as a Flower app trains it: its clients one by one, each on a node. Where the CLI's default
    ('auto') trains them one by one too, the config is the CLI's, run id and record included; where 'auto'
    would train a round's clients as one cohort (whose floats differ from the sequential trainer's in the last
    bits: tests/test_cohort.py), the run is the sequential trainer's, under that trainer's own run id, which
    `python -m fssl_core run ... trainer=sequential` shares. An explicit trainer='cohort' is refused."""
    if cfg.trainer == "cohort":
        raise ConfigError("Flower run config: trainer='cohort': a Flower client trains alone, not as one cohort; "
                          "use trainer='auto' or 'sequential'")
    if cfg.trainer == AUTO and trains_as_cohort(cfg):
        return cfg.replace(trainer="sequential")
    return cfg


def refuse_cohort(cfg: RunConfig, fed: Federation) -> None:
    if fed.cohort:
        raise ConfigError(f"RunConfig.trainer={cfg.trainer!r}: the engine trains this run's clients as one cohort, "
                          "and a Flower client trains alone; use trainer='sequential' (flower_trainer)")


# --- the server ----------------------------------------------------------------------------------------
class FsslStrategy(Strategy):
    """A Flower strategy that runs an fssl algorithm's server side for one run and records it: it holds
    the run's state, and reports each round to the run's recorder (rounds continue after its checkpoint)."""

    def __init__(self, recorder: RunRecorder, progress: bool = True, tracker: Tracker | None = None):
        self.recorder, self.cfg, self.tracker = recorder, recorder.cfg, tracker
        self.fed = federation(self.cfg)
        refuse_cohort(self.cfg, self.fed)
        since = time.time()
        self.state: State = recorder.start(self.fed.device, self.fed.initial_state, self.fed.data.digest,
                                           executor=EXECUTOR)
        if tracker is not None:
            tracker.started(self.cfg, recorder.dir, list(recorder.rows), since)
        self.done = recorder.next_round - 1          # rounds recorded before this start (a resumed run)
        self.progress = progress
        self.node_of: dict[int, int] = {}            # client -> node id
        self.round_start = 0.0
        self.downloaded = 0

    def summary(self) -> None:
        print(f"[flower] fssl {describe(self.cfg)}: {self.cfg.clients} clients, {self.cfg.clients_per_round} a "
              f"round, rounds {self.done + 1}..{self.cfg.rounds}", file=sys.stderr)

    def place_clients(self, grid: Grid) -> None:
        """Client k trains on node k mod N, the N nodes ordered by the partition they report (Flower's
        simulation numbers them 0..N-1; a deployed node without one is ordered by its node id): many clients a
        node where the federation has fewer nodes than clients (Flower's default federation has 2). Any node can
        train any client: a ClientApp builds the run's data from the config the server sends."""
        nodes = wait_for_nodes(grid)
        asks = [Message(content=RecordDict({"config": ConfigRecord({"code": code_digest()})}), dst_node_id=node,
                        message_type="query") for node in nodes]
        self.node_of = placement(grid.send_and_receive(asks), self.cfg.clients)
        print(f"[flower] {self.cfg.clients} clients on {len(set(self.node_of.values()))} nodes", file=sys.stderr)

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> list[Message]:
        if not self.node_of:
            self.place_clients(grid)
        fed, algo, round = self.fed, self.fed.algorithm, self.done + server_round
        self.round_start = time.perf_counter()
        fed.server_begin(self.state, round)
        participations = fed.participations(round)
        messages, self.downloaded = [], 0
        for client in fed.sample_clients(round):
            payload = algo.download(self.state, round, client)
            self.downloaded += payload_bytes(payload)
            tensors, numbers = pack(payload)
            content = RecordDict({"payload": tensors, "numbers": numbers, "config": ConfigRecord({
                "run": json.dumps(self.cfg.to_dict()), "round": round, "client": client,
                "participation": int(participations[client])})})
            messages.append(Message(content=content, dst_node_id=self.node_of[client], message_type="train"))
        return messages

    def aggregate_train(self, server_round: int, replies) -> tuple[ArrayRecord | None, MetricRecord | None]:
        round, uploads = self.done + server_round, []
        for reply in replies:
            if reply.has_error():
                reason = reply.error.reason
                if Diverged.__name__ in reason:
                    raise Diverged(reason)
                raise RuntimeError(f"[flower] round {round}, node {reply.metadata.src_node_id}: {reason}")
            info = reply.content["config"]
            uploads.append(Upload(int(info["client"]), unpack(reply.content["payload"], reply.content["numbers"],
                                                              self.fed.device),
                                  int(info["num_labeled"]), int(info["num_unlabeled"]),
                                  dict(reply.content["stats"]), int(info["participation"])))
        uploads.sort(key=lambda u: u.client)       # the engine's order: sample_clients is sorted
        self.state, row = self.fed.server_end(self.state, round, uploads, self.downloaded)
        row["seconds"] = time.perf_counter() - self.round_start
        self.recorder.record_round(round, self.state, row)
        if self.tracker is not None:
            self.tracker.round_finished(self.cfg, round, row)
        if self.progress:
            shown = f", accuracy {row['accuracy']:.2f}%" if "accuracy" in row else ""
            print(f"[flower] round {round}/{self.cfg.rounds}{shown}, {row['seconds']:.1f} s", file=sys.stderr)
        trained = {k: v for k, v in row.items() if _number(v) and not _evaluated(k)}
        return pack(self.fed.algorithm.eval_tensors(self.state))[0], MetricRecord(trained)

    def evaluate(self, server_round: int, arrays: ArrayRecord) -> MetricRecord | None:
        """The round's test metrics, as Flower's server-side evaluation (fssl evaluates at the server, in
        server_end; this reports what it measured)."""
        if server_round == 0 or not self.recorder.rows:
            return None
        tested = {k: v for k, v in self.recorder.rows[-1].items() if _number(v) and _evaluated(k)}
        return MetricRecord(tested) if tested else None

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> list[Message]:
        return []           # no client-side evaluation: fssl evaluates the global model at the server

    def aggregate_evaluate(self, server_round: int, replies) -> MetricRecord | None:
        return None

    def finish(self, status: str = OK, failure: dict | None = None) -> RunResult:
        result = self.recorder.finish(status, failure, self.fed.model_parameters, self.fed.num_classes)
        if self.tracker is not None:
            self.tracker.finished(self.cfg, self.recorder.dir, result.summary)
        return result


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _evaluated(key: str) -> bool:
    return key == "accuracy" or key.startswith("test_")


def placement(replies, clients: int) -> dict[int, int]:
    """Client -> node from the nodes' replies to the server's query (each its partition and code digest): client
    k on node k mod N, the N nodes by partition, then node id. A node running other code than the server is
    refused: its clients would train by other code than the run's record says."""
    order, other_code = {}, []
    for reply in replies:
        if reply.has_error():
            raise RuntimeError(f"[flower] node {reply.metadata.src_node_id}: {reply.error.reason}")
        said, node = reply.content["config"], reply.metadata.src_node_id
        order[node] = (int(said["partition"]), node)
        if str(said["code"]) != code_digest():
            other_code.append(f"{node} ({str(said['code'])[:12]})")
    if other_code:
        raise ConfigError(f"[flower] nodes {', '.join(other_code)} run another fssl_core than the server's "
                          f"({code_digest()[:12]}, code_digest): install this checkout's fssl_core on every SuperNode")
    ordered = sorted(order, key=order.get)
    return {client: ordered[client % len(ordered)] for client in range(clients)}


def wait_for_nodes(grid: Grid, settle: float = 1.0, wait: float = 120.0) -> list[int]:
    """The nodes of the federation once their number has held for `settle` seconds (a simulation registers its
    nodes at its start; a deployment's join as they connect); waits up to `wait` seconds for a first one."""
    deadline, nodes, since = time.monotonic() + wait, [], time.monotonic()
    while time.monotonic() < deadline:
        now = sorted(grid.get_node_ids())
        if now != nodes:
            nodes, since = now, time.monotonic()
        elif nodes and time.monotonic() - since >= settle:
            return nodes
        time.sleep(0.1)
    if not nodes:
        raise RuntimeError(f"[flower] no node joined the federation in {wait:.0f} s")
    return nodes


def run_federated(grid: Grid, cfg: RunConfig, store: RunStore, progress: bool = True,
                  tracker: Tracker | None = None) -> RunResult:
    """Train `cfg` on the grid's nodes into `store`: the finished run read back, else trained (resumed from
    its checkpoint) and recorded as the engine records it, followed by `tracker` as the engine's trainer
    follows a run (e.g. integrations/mlflow_track.py). A loss that became NaN ends it as diverged."""
    with store.claim(cfg) as claimed:
        if isinstance(claimed, RunResult):
            return claimed
        try:
            strategy = FsslStrategy(claimed, progress, tracker)
            try:
                strategy.start(grid, ArrayRecord(), num_rounds=cfg.rounds - strategy.done,
                               evaluate_fn=strategy.evaluate)
            except Diverged as err:
                return strategy.finish(DIVERGED, {"round": claimed.next_round, "reason": str(err)})
            return strategy.finish()
        except BaseException as err:
            if tracker is not None:
                tracker.stopped(cfg, err)
            raise


def refuse_other_code(submitted: str) -> None:
    """The submitting checkout's fssl_core (`python -m fssl_core flower` passes its version and code digest as
    `fssl-code`) against the one this ServerApp runs: a SuperLink started from another checkout or environment
    would train by other code, into another store, than the submitter's."""
    mine = f"{__version__}:{code_digest()}"
    if submitted and submitted != mine:
        raise ConfigError(f"fssl-code={submitted[:22]}: this SuperLink runs another fssl_core ({mine[:22]}, from "
                          f"{Path(__file__).resolve().parents[1]}) than the submitting checkout's: stop that SuperLink "
                          "(pkill -f flower-superlink) and submit again, which starts one from this checkout")


class Refused(Exception):
    """A run config the app refuses. Its message, one line, is what Flower records as the run's failure
    (`flwr ls --run-id N`: "... failed with exception: fssl refused: ..."), which `python -m fssl_core flower`
    turns into exit status 2."""


class NotAResult(Exception):
    """A run that finished, and is recorded, but diverged or ended at chance: Flower records the run as failed
    ("fssl not a result: ..."), which `python -m fssl_core flower` turns into exit status 3, as `run` exits."""


server = ServerApp()


@server.main()
def serve(grid: Grid, context: Context) -> None:
    try:
        cfg, store, options = app_config(context.run_config)
        refuse_other_code(str(options["fssl-code"]))
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        raise Refused(f"{REFUSED}{err}") from None
    tracker = None
    if options["track-uri"]:
        tracker = MlflowTracker(str(options["track-uri"]), str(options["track-experiment"] or "fssl"))
    result = run_federated(grid, cfg, store, bool(options["progress"]), tracker)
    line = f"{describe(cfg)}: {result.status}, accuracy {result.accuracy}%, run {cfg.run_id} in {store.root}"
    print(f"[flower] {line}", file=sys.stderr)
    if result.status != OK:
        raise NotAResult(f"{NOT_A_RESULT}{line}")


# --- the clients ---------------------------------------------------------------------------------------
client = ClientApp()


@client.query()
def where(msg: Message, context: Context) -> Message:
    """The node's place among the federation's nodes: its partition where it has one (Flower's simulation
    gives each node `partition-id`), else -1 (ordered by node id); and the digest of the fssl_core it runs."""
    partition = int(context.node_config.get("partition-id", -1))
    return Message(content=RecordDict({"config": ConfigRecord({"partition": partition, "code": code_digest()})}),
                   reply_to=msg)


@client.train()
def train(msg: Message, context: Context) -> Message:
    info = msg.content["config"]
    client_id = int(info["client"])
    cfg = RunConfig.from_dict(json.loads(str(info["run"])))
    fed = federation(cfg)
    payload = unpack(msg.content["payload"], msg.content["numbers"], fed.device)
    upload = fed.train_client(int(info["round"]), client_id, payload, int(info["participation"]))
    tensors, numbers = pack(upload.payload)
    return Message(content=RecordDict({
        "payload": tensors, "numbers": numbers,
        "stats": MetricRecord({k: float(v) for k, v in upload.stats.items()}),
        "config": ConfigRecord({"client": client_id, "num_labeled": upload.num_labeled,
                                "num_unlabeled": upload.num_unlabeled, "participation": upload.participations})}),
        reply_to=msg)
