import sys
from pathlib import Path

import torch

# The package and the reference live beside the tests; no install step needed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
torch.set_num_threads(2)
