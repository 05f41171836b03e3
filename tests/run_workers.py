"""Targets of the processes tests start (multiprocessing spawn imports the module a target lives in:
this one imports only what a worker needs, not pytest's fixtures or torchvision)."""
import os


def execute_and_log_rounds(root: str, cfg_dict: dict, log: str, barrier, results) -> None:
    """Execute a config once every worker is ready; log "<pid> <round>" per trained round."""
    from fssl_core.run_config import RunConfig
    from fssl_core.store import RunStore
    from fssl_core.engine.trainer import train

    def note(r):
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {r}\n")
    cfg = RunConfig.from_dict(cfg_dict)
    barrier.wait()
    result = train(cfg, RunStore(root), progress=False, after_round=note)
    results.put((os.getpid(), [{k: v for k, v in m.items() if k != "seconds"} for m in result.metrics]))
