"""Finished runs written without training, sealed as the store writes them (store/integrity.py), for tests of
what reads a store (plans, reports). A row needs round, seconds and the bytes; accuracy where evaluated."""
import json

from fssl_core.store import OK, RunStore, save_checkpoint, write_result, write_rows


def fake_finished_run(store: RunStore, cfg, rows: list[dict], status: str = OK, num_classes: int = 10,
                      env: dict | None = None):
    d = store.dir(cfg)
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(cfg.fields_read()))
    env = {"fssl_core": "test", "executor": "engine"} if env is None else env
    (d / "env.json").write_text(json.dumps(env))
    write_rows(d, rows)
    save_checkpoint(d, cfg, len(rows), {}, rows)
    return write_result(d, cfg, rows, status, None, model_parameters=0, num_classes=num_classes)


def row(round: int, accuracy: float | None = None, seconds: float = 1.0, upload_bytes: int = 0) -> dict:
    out = {"round": round, "upload_bytes": upload_bytes, "download_bytes": 0, "seconds": seconds}
    return out if accuracy is None else {**out, "accuracy": accuracy}
