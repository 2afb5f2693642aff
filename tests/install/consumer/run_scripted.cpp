// Loads a TorchScript model that calls pln operators (scripted in Python) and
// checks its output against the one Python saved beside it. It calls no pln
// function: linking pln::ops is what registers the operators.
#include <torch/script.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: run_scripted MODEL.pt\n";
    return 2;
  }
  torch::jit::Module check = torch::jit::load(argv[1]);
  const auto x = check.attr("x").toTensor();
  const auto expected = check.attr("expected").toTensor();
  const auto y = check.get_method("run")({x}).toTensor();
  const double err = (y - expected).abs().max().item<double>();
  std::cout << "scripted model with pln ops, output " << y.sizes() << ", max |C++ - Python| " << err << "\n";
  return err < 1e-6 ? 0 : 1;
}
