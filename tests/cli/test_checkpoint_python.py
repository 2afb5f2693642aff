"""A pln checkpoint is a safetensors file that the Python ecosystem opens.

`safetensors.torch.load_file` reads the checkpoint of a `pln fourier` run,
and the network's tensors ("model.NAME", the C++ module's state_dict names)
load, strictly, into the same network built from the Python package's
modules; the optimiser's tensors are named after the parameters they
belong to. Run by CTest with PLN_CLI (the command line) and PLN_LIBRARY set.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

safetensors_torch = pytest.importorskip("safetensors.torch")
from safetensors import safe_open  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import pln  # noqa: E402

WIDTH, GROUP = 16, 4


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("fourier")
    subprocess.run([os.environ["PLN_CLI"], "fourier", "--preset", "smoke", "--threads", "1", "--out", str(out),
                    "--set", "layer=pln", f"group={GROUP}", f"width={WIDTH}", "depth=2", "steps=40",
                    "checkpoint_every=20", "dtype=float64"], check=True, capture_output=True)
    return out / "checkpoint.safetensors"


def test_load_file_opens_it_and_the_network_loads_into_the_packages_modules(checkpoint):
    tensors = safetensors_torch.load_file(str(checkpoint))
    model = {name[len("model."):]: t for name, t in tensors.items() if name.startswith("model.")}
    net = torch.nn.Sequential(torch.nn.Linear(1, WIDTH), pln.ParallelLN(WIDTH, GROUP, dim=2),
                              torch.nn.Linear(WIDTH, WIDTH), pln.ParallelLN(WIDTH, GROUP, dim=2),
                              torch.nn.Linear(WIDTH, 1)).double()
    net.load_state_dict(model, strict=True)
    for name, value in net.state_dict().items():
        assert torch.equal(value, model[name]), name
    # The norms' affine parameters were trained: not the initial ones and zeros.
    assert not torch.equal(net[1].weight, torch.ones(WIDTH, dtype=torch.float64))
    for name, value in net.named_parameters():
        assert tensors[f"optimizer.{name}.exp_avg"].shape == value.shape
        assert tensors[f"last_finite.{name}"].shape == value.shape
    x = torch.linspace(-1, 1, 64, dtype=torch.float64).unsqueeze(1)
    assert torch.isfinite(net(x)).all()


def test_its_metadata_holds_the_configuration_and_the_training_state(checkpoint):
    with safe_open(str(checkpoint), framework="pt") as f:
        metadata = f.metadata()
    assert metadata["format"] == "pln-checkpoint-1"
    config = json.loads(metadata["config"])
    assert (config["width"], config["group"], config["steps"]) == (WIDTH, GROUP, 40)
    state = json.loads(metadata["state"])
    assert state["step"] == 20
    assert state["optimizer"]["kind"] == "adam"
    assert set(state["optimizer"]["steps"].values()) == {20}
