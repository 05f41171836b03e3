"""The precision policy: exact FP32 on CUDA unless a run's config asks for TF32, in its identity and
its env.json (fssl_core/learning/precision.py)."""
import json

import pytest
import torch

from fssl_core.learning import precision
from fssl_core.config import ConfigError
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore
from fssl_core.engine.trainer import train

from .conftest import requires_mnist


@pytest.fixture
def restored_switches():
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark,
             torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    yield
    (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
     torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark) = saved[:4]
    torch.use_deterministic_algorithms(saved[4], warn_only=saved[5])


@pytest.mark.parametrize("policy, tf32", [("fp32", False), ("tf32", True)])
def test_a_cuda_run_sets_the_switches_of_its_policy(policy, tf32, restored_switches):
    # the opposite of each switch first
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = not tf32
    torch.backends.cudnn.benchmark = not tf32
    torch.backends.cudnn.deterministic = tf32
    torch.use_deterministic_algorithms(tf32)
    precision.apply(policy, torch.device("cuda"))     # only switches: no GPU is needed to set them
    assert torch.backends.cuda.matmul.allow_tf32 is tf32 and torch.backends.cudnn.allow_tf32 is tf32
    assert torch.backends.cudnn.deterministic is (not tf32) and torch.backends.cudnn.benchmark is tf32
    assert torch.are_deterministic_algorithms_enabled() is (not tf32)
    assert torch.is_deterministic_algorithms_warn_only_enabled() or tf32


def test_a_cpu_run_changes_no_switch(restored_switches):
    before = (torch.backends.cudnn.allow_tf32, torch.backends.cudnn.deterministic,
              torch.are_deterministic_algorithms_enabled())
    precision.apply("fp32", torch.device("cpu"))
    assert (torch.backends.cudnn.allow_tf32, torch.backends.cudnn.deterministic,
            torch.are_deterministic_algorithms_enabled()) == before


def test_tf32_is_part_of_the_identity_and_fp32_keeps_the_ids_runs_had():
    cuda = RunConfig(device="cuda")
    assert cuda.replace(precision="tf32").run_id != cuda.run_id
    assert RunConfig(precision="fp32").run_id == RunConfig().run_id == "b38dab43ee12f371"


@pytest.mark.parametrize("changes, message", [
    (dict(precision="tf32"), r"^RunConfig\.precision='tf32', device='cpu': TF32 is a format of NVIDIA GPUs' tensor "
                             r"cores; use device='cuda', or precision='fp32'$"),
    (dict(precision="bf16", device="cuda"), r"^RunConfig\.precision='bf16': must be one of fp32, tf32$"),
])
def test_a_precision_the_device_cannot_give_is_one_clear_error(changes, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig(**changes)


@requires_mnist
def test_env_json_records_the_policy_of_the_run(tmp_path):
    cfg = RunConfig(dataset="mnist", clients=600, clients_per_round=1, rounds=1, local_epochs=1)
    store = RunStore(tmp_path)
    train(cfg, store, progress=False)
    env = json.loads((store.dir(cfg) / "env.json").read_text())
    assert env["precision"] == {"policy": "fp32", "device": "cpu"}
