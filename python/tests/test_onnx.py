"""ONNX export (torch.onnx.export, dynamo=True) as standard ONNX operators,
run by onnxruntime against eager PyTorch."""

import pytest
import torch

import pln
from shared import needs_torch2

pytestmark = needs_torch2

onnx = pytest.importorskip("onnx", reason="onnx is not installed (scripts/venv installs it)")
pytest.importorskip("onnxscript", reason="onnxscript is not installed (scripts/venv installs it)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (scripts/venv installs it)")
import pln.onnx  # noqa: E402
from shared import randomise  # noqa: E402

C = 16


class Net(torch.nn.Module):
    """A linear layer on each side of the norm, so the norm's input and output are inner values."""

    def __init__(self, norm, features_axis):
        super().__init__()
        self.norm, self.axis = norm, features_axis
        self.a, self.b = torch.nn.Linear(C, C), torch.nn.Linear(C, C)

    def forward(self, x):
        h = self.a(x.movedim(self.axis, -1)).movedim(-1, self.axis)
        return self.b(self.norm(h).movedim(self.axis, -1)).movedim(-1, self.axis)


CASES = {
    # name: (module, input shape, feature axis, expected node types)
    "nc": (lambda: pln.ParallelLN(C, 4, dim=2), (3, C), 1, {"LayerNormalization"}),
    "ntc": (lambda: pln.ParallelLN(C, 4, dim=3), (3, 5, C), 2, {"LayerNormalization"}),
    "features_last_rank4": (lambda: pln.ParallelLN(C, 8, dim=3), (3, 2, 5, C), 3, {"LayerNormalization"}),
    "nhwc": (lambda: pln.ParallelLN(C, 4, layout="nhwc"), (3, 2, 5, C), 3, {"LayerNormalization"}),
    "nchw": (lambda: pln.ParallelLN(C, 4), (3, C, 2, 5), 1, {"ReduceMean", "Sqrt"}),
    "ncl": (lambda: pln.ParallelLN(C, 2, layout="ncl"), (3, C, 7), 1, {"ReduceMean", "Sqrt"}),
    "pls_ntc": (lambda: pln.PLS(C, 4, dim=3, bias=False), (3, 5, C), 2, {"ReduceMean", "Sqrt"}),
    "p3_nchw": (lambda: pln.ParallelLN(C, 4, p=3), (3, C, 2, 2), 1, {"Pow", "Abs"}),
    "pq_ntc": (lambda: pln.PQNorm(C, 4, p=3.0, q=1.5, dim=3), (3, 5, C), 2, {"Sign", "Pow"}),
    "pq22_nc": (lambda: pln.PQNorm(C, 8, dim=2, elementwise_affine=False), (3, C), 1, {"LayerNormalization"}),
}


class Direct(torch.nn.Module):
    """Calls torch.ops.pln.* itself, as code that does not use the modules does:
    the exported graph holds the pln operators, which pln.onnx translates."""

    def __init__(self, norm):
        super().__init__()
        self.norm = norm

    def forward(self, x):
        n = self.norm
        if isinstance(n, pln.PQNorm):
            return torch.ops.pln.pq_norm(x, n.weight, n.bias, n.num_features, n.num_per_group, float(n.p),
                                         float(n.q), n.eps, n.centering, n.layout)
        return torch.ops.pln.parallel_ln(x, n.weight, n.bias, n.num_features, n.num_per_group, n.eps,
                                         n.centering, n.layout, float(n.p))


@pytest.mark.parametrize("direct", [True, False], ids=["operator", "module"])
@pytest.mark.parametrize("case", list(CASES))
def test_export_is_standard_onnx_and_matches_eager(case, direct, tmp_path):
    make, shape, axis, expected_ops = CASES[case]
    if direct and case == "features_last_rank4":
        pytest.skip("the operators' features-last layouts are 2-D and 3-D")
    torch.manual_seed(0)
    norm = make()
    model = randomise(Net(Direct(norm) if direct else norm, axis)).eval()
    x = torch.randn(shape) * 2 + 0.5
    batch = torch.export.Dim("batch", min=1, max=64)
    program = pln.onnx.export(model, (x,), dynamic_shapes=({0: batch},))
    if direct:  # the operators reached the exporter and were translated
        targets = {str(n.target) for n in program.exported_program.graph.nodes}
        assert targets & {"pln.parallel_ln.default", "pln.pq_norm.default"}, targets
    path = tmp_path / f"{case}.onnx"
    program.save(str(path))
    graph = onnx.load(str(path))
    onnx.checker.check_model(graph, full_check=True)
    nodes = list(graph.graph.node)
    for function in graph.functions:
        nodes += list(function.node)
    domains = {n.domain for n in nodes}
    assert domains <= {"", "ai.onnx"}, domains  # no custom-domain node: any runtime runs it
    ops = {n.op_type for n in nodes}
    if direct:  # the translations' own operators
        assert expected_ops <= ops, sorted(ops)
    elif "LayerNormalization" in expected_ops:  # the modules' formula, through ATen's layer_norm
        assert "LayerNormalization" in ops, sorted(ops)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    for n in (shape[0], 1, 7):  # the dynamic batch size
        xi = torch.randn((n,) + tuple(shape[1:])) * 2 + 0.5
        (got,) = session.run(None, {name: xi.numpy()})
        with torch.no_grad():
            want = model(xi)
        torch.testing.assert_close(torch.from_numpy(got), want, atol=2e-5, rtol=2e-5)


def test_translation_table_with_torch_onnx_export(tmp_path):
    model = randomise(Direct(pln.ParallelLN(C, 4, dim=3))).eval()
    x = torch.randn(2, 3, C)
    program = torch.onnx.export(model, (x,), dynamo=True,
                                custom_translation_table=pln.onnx.translation_table())
    path = tmp_path / "m.onnx"
    program.save(str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():
        torch.testing.assert_close(torch.from_numpy(got), model(x), atol=2e-5, rtol=2e-5)


def test_operator_without_translation_is_a_clear_error():
    class TrainingHalf(torch.nn.Module):
        def forward(self, x):
            return torch.ops.pln.parallel_ln_forward(x, None, None, C, 4, 1e-5, True, "nc")[0]

    with pytest.raises(Exception, match=r"torch.ops.pln.parallel_ln_forward has no ONNX translation"):
        pln.onnx.export(TrainingHalf(), (torch.randn(2, C),))


def test_export_arguments_the_translations_cannot_serve():
    model = pln.ParallelLN(C, 4, dim=2)
    with pytest.raises(ValueError, match=r"opset_version=16 has no LayerNormalization; pln's translations "
                                         r"need opset 17 or later"):
        pln.onnx.export(model, (torch.randn(2, C),), opset_version=16)
    with pytest.raises(ValueError, match="need the dynamo exporter"):
        pln.onnx.export(model, (torch.randn(2, C),), dynamo=False)


@pytest.mark.parametrize("case", ["ntc", "nchw", "pq_ntc"])
def test_plain_torch_onnx_export_needs_only_import_pln(case, tmp_path):
    """Without the translation table: inside torch.onnx.export the modules and
    pln.functional write their formulas as ATen operations, which the exporter
    translates into standard ONNX operators (LayerNormalization where it fits)."""
    make, shape, axis, expected_ops = CASES[case]
    model = randomise(Net(make(), axis)).eval()
    x = torch.randn(shape) * 2 + 0.5
    program = torch.onnx.export(model, (x,), dynamo=True,
                                dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},))
    path = tmp_path / "m.onnx"
    program.save(str(path))
    graph = onnx.load(str(path))
    ops = {n.op_type for n in graph.graph.node} | {n.op_type for f in graph.functions for n in f.node}
    assert {n.domain for n in graph.graph.node} <= {"", "ai.onnx"}
    if case == "ntc":
        assert "LayerNormalization" in ops, ops
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for n in (shape[0], 5):
        xi = torch.randn((n,) + tuple(shape[1:]))
        (got,) = session.run(None, {session.get_inputs()[0].name: xi.numpy()})
        with torch.no_grad():
            torch.testing.assert_close(torch.from_numpy(got), model(xi), atol=2e-5, rtol=2e-5)
