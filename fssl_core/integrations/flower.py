"""Any fssl algorithm as a Flower app (`pip install -e '.[flower]'`): a ServerApp whose strategy runs the
algorithm's server hooks, and a ClientApp whose client trains with its local hooks on its own partition.

    from fssl_core.integrations.flower import simulate
    rows, state = simulate(RunConfig(algorithm="fedsiam_d", dataset="mnist", clients=10, clients_per_round=3))

or, from a shell, `python -m fssl_core.integrations.flower algorithm=fedavg clients=10 ...` (the same
key=value pairs as `python -m fssl_core run`).

How the work is split, so that a round computes what fssl's engine computes (engine.Federation.run_round):
- The ServerApp holds the run's state. Per round, `FsslStrategy.configure_train` runs the server's hooks
  before the round (`Federation.server_begin`), samples the clients from the (seed, round) stream, and sends
  each the algorithm's download payload. `aggregate_train` puts the uploads back in client order and runs
  aggregation, the server's hooks after it, and the round's metrics (`Federation.server_end`: the test set
  is evaluated at the server, as fssl does; the traffic counted as fssl counts it, from the payloads).
- Supernode k holds client k's partition (its `partition-id`); the server sends client k's payload to the
  node that says it holds client k. The ClientApp builds the run's data and partition once per process and
  runs `Federation.train_client`: the client's local training on its own (seed, round, client) stream.
- Payloads cross as ArrayRecords, nested keys joined by '/', every tensor as it is (float32, int64).

Flower's simulation engine (Ray) runs it on one machine here; the same ServerApp and ClientApp objects run on
Flower's deployment runtime (SuperLink/SuperNodes), which is not tested here. A Flower run trains clients
one after another, as fssl's sequential trainer does, each process on one CPU thread: on CPU its per-round
accuracy and final weights equal those of fssl's engine with trainer='sequential' (tests/test_flower.py).
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

import torch

from ..algorithms.base import Payload, State, Upload
from ..run_config import RunConfig
from ..engine.federation import Federation, payload_bytes

try:
    from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import Strategy
except ImportError:             # pragma: no cover - said once, where it is used
    raise ImportError("fssl_core.integrations.flower needs Flower: pip install -e '.[flower]'") from None

SEP = "/"
_federations: dict[str, Any] = {}       # run id -> Federation, one per process (data loaded once)


def _federation(cfg: RunConfig) -> Federation:
    if cfg.run_id not in _federations:
        if cfg.device == "cpu":       # one thread, as trainer.train_batch trains: a reduction's order is fixed
            torch.set_num_threads(1)
        _federations[cfg.run_id] = Federation.build(cfg)
    return _federations[cfg.run_id]


# --- payloads as records -------------------------------------------------------------------------------
def pack(payload: Payload) -> tuple[ArrayRecord, list[str]]:
    """A nested dict of tensors as an ArrayRecord (keys joined by '/'), and the paths of its empty dicts."""
    arrays: dict[str, Array] = {}
    empty: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if not node:
                empty.append(path)
            for key, value in node.items():
                if SEP in key:
                    raise ValueError(f"payload key {key!r} holds {SEP!r}, which the Flower adapter joins keys with")
                walk(value, f"{path}{SEP}{key}" if path else key)
        elif isinstance(node, torch.Tensor):
            arrays[path] = Array.from_torch_tensor(node.detach().cpu())
        else:
            raise TypeError(f"payload {path!r}: a {type(node).__name__}; a payload holds dicts of tensors only")

    walk(payload, "")
    return ArrayRecord(array_dict=arrays), empty


def unpack(record: ArrayRecord, empty: list[str], device: torch.device) -> Payload:
    out: Payload = {}

    def place(path: str, value: Any) -> None:
        *parents, leaf = path.split(SEP)
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value

    for path in empty:
        if path:
            place(path, {})
    for path, array in record.items():
        place(path, torch.from_numpy(array.numpy().copy()).to(device))
    return out


# --- the server ----------------------------------------------------------------------------------------
class FsslStrategy(Strategy):
    """A Flower strategy that runs an fssl algorithm's server side; it holds the run's state and rows."""

    def __init__(self, cfg: RunConfig, progress: bool = True):
        self.cfg = cfg
        self.fed = _federation(cfg)
        self.state: State = self.fed.initial_state()
        self.rows: list[dict[str, Any]] = []
        self.progress = progress
        self._node_of: dict[int, int] = {}          # client -> node id
        self._round_start = 0.0
        self._downloaded = 0

    def summary(self) -> None:
        print(f"[flower] fssl {self.cfg.algorithm} on {self.cfg.dataset}: {self.cfg.clients} clients, "
              f"{self.cfg.clients_per_round} a round, {self.cfg.rounds} rounds", file=sys.stderr)

    def locate_clients(self, grid: Grid, wait: float = 120.0) -> None:
        """Ask every node which client's partition it holds (once `clients` nodes have joined)."""
        deadline = time.monotonic() + wait
        while len(grid.get_node_ids()) < self.cfg.clients and time.monotonic() < deadline:
            time.sleep(0.2)
        asks = [Message(content=RecordDict(), dst_node_id=node, message_type="query") for node in grid.get_node_ids()]
        for reply in grid.send_and_receive(asks):
            if reply.has_error():
                raise RuntimeError(f"[flower] node {reply.metadata.src_node_id}: {reply.error.reason}")
            self._node_of[int(reply.content["config"]["client"])] = reply.metadata.src_node_id
        missing = sorted(set(range(self.cfg.clients)) - set(self._node_of))
        if missing:
            raise RuntimeError(f"[flower] no node holds clients {missing}: run {self.cfg.clients} supernodes")

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> list[Message]:
        if not self._node_of:
            self.locate_clients(grid)
        fed, algo, round = self.fed, self.fed.algorithm, server_round
        self._round_start = time.perf_counter()
        fed.server_begin(self.state, round)
        participations = fed.participations(round)
        messages, self._downloaded = [], 0
        for client in fed.sample_clients(round):
            payload = algo.download(self.state, round, client)
            self._downloaded += payload_bytes(payload)
            record, empty = pack(payload)
            content = RecordDict({"payload": record, "config": ConfigRecord({
                "run": json.dumps(self.cfg.to_dict()), "round": round, "client": client,
                "participation": int(participations[client]), "empty": empty})})
            messages.append(Message(content=content, dst_node_id=self._node_of[client], message_type="train"))
        return messages

    def aggregate_train(self, server_round: int, replies) -> tuple[ArrayRecord | None, MetricRecord | None]:
        uploads: list[Upload] = []
        for reply in replies:
            if reply.has_error():
                raise RuntimeError(f"[flower] round {server_round}, node {reply.metadata.src_node_id}: "
                                   f"{reply.error.reason}")
            info = reply.content["config"]
            uploads.append(Upload(int(info["client"]), unpack(reply.content["payload"], list(info["empty"]),
                                                              self.fed.device),
                                  int(info["num_labeled"]), int(info["num_unlabeled"]),
                                  dict(reply.content["stats"]), int(info["participation"])))
        uploads.sort(key=lambda u: u.client)       # the engine's order: sample_clients is sorted
        self.state, row = self.fed.server_end(self.state, server_round, uploads, self._downloaded)
        row["seconds"] = time.perf_counter() - self._round_start
        self.rows.append(row)
        if self.progress:
            shown = f", accuracy {row['accuracy']:.2f}%" if "accuracy" in row else ""
            print(f"[flower] round {server_round}/{self.cfg.rounds}{shown}, {row['seconds']:.1f} s", file=sys.stderr)
        metrics = {k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return pack(self.fed.algorithm.eval_tensors(self.state))[0], MetricRecord(metrics)

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> list[Message]:
        return []           # fssl evaluates the global model on the test set, at the server

    def aggregate_evaluate(self, server_round: int, replies) -> MetricRecord | None:
        return None


def server_app(strategy: FsslStrategy) -> ServerApp:
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        strategy.start(grid, ArrayRecord(), num_rounds=strategy.cfg.rounds)

    return app


# --- the clients ---------------------------------------------------------------------------------------
def client_app() -> ClientApp:
    app = ClientApp()

    @app.query()
    def where(msg: Message, context: Context) -> Message:
        return Message(content=RecordDict({"config": ConfigRecord({"client": int(context.node_config["partition-id"])})}),
                       reply_to=msg)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        info = msg.content["config"]
        client = int(info["client"])
        if client != int(context.node_config["partition-id"]):
            raise RuntimeError(f"node holding client {context.node_config['partition-id']} was sent client {client}")
        cfg = RunConfig.from_dict(json.loads(str(info["run"])))
        fed = _federation(cfg)
        payload = unpack(msg.content["payload"], list(info["empty"]), fed.device)
        upload = fed.train_client(int(info["round"]), client, payload, int(info["participation"]))
        record, empty = pack(upload.payload)
        return Message(content=RecordDict({
            "payload": record, "stats": MetricRecord({k: float(v) for k, v in upload.stats.items()}),
            "config": ConfigRecord({"client": client, "num_labeled": upload.num_labeled,
                                    "num_unlabeled": upload.num_unlabeled, "participation": upload.participations,
                                    "empty": empty})}), reply_to=msg)

    return app


def simulate(cfg: RunConfig, progress: bool = True, backend_config: dict | None = None
             ) -> tuple[list[dict[str, Any]], State]:
    """Run `cfg` in Flower's simulation engine, one supernode per client; return the per-round metric rows
    (as fssl's metrics.jsonl has them) and the final server state."""
    from flwr.simulation import run_simulation
    if cfg.trainer == "cohort":
        raise ValueError(f"RunConfig.trainer={cfg.trainer!r}: a Flower client trains alone; use 'sequential' or 'auto'")
    strategy = FsslStrategy(cfg, progress=progress)
    run_simulation(server_app=server_app(strategy), client_app=client_app(), num_supernodes=cfg.clients,
                   backend_config=backend_config or {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}},
                   verbose_logging=False)
    if len(strategy.rows) != cfg.rounds:
        raise RuntimeError(f"[flower] the simulation ended after {len(strategy.rows)} of {cfg.rounds} rounds "
                           "(Flower's log above says why)")
    return strategy.rows, strategy.state


def main(argv: list[str] | None = None) -> int:
    from ..config import key_value_pairs
    cfg = RunConfig.from_strings(key_value_pairs(sys.argv[1:] if argv is None else argv))
    start = time.perf_counter()
    rows, _ = simulate(cfg)
    final = next((r["accuracy"] for r in reversed(rows) if "accuracy" in r), None)
    print(f"[flower] {cfg.algorithm} {cfg.dataset}: {cfg.rounds} rounds in {time.perf_counter() - start:.0f} s, "
          f"final accuracy {final}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
