#pragma once
// The PINN network and its Taylor-mode forward pass.
//
// Structure (in_dim inputs, width w, depth d):
//   Linear(in_dim, w), then d blocks [Norm(affine = false) -> act -> Linear],
//   where the Linear of the last block maps w -> 1 and the others w -> w.
// So depth = 3 is Linear(1,w) N a Linear(w,w) N a Linear(w,w) N a Linear(w,1):
// three hidden layers, each normalised.
//
// forward_jet() propagates, with the value, the first and second derivatives
// of every feature along each input axis through the layers (Taylor mode), so
// a PDE residual needs one forward and one ordinary backward instead of
// differentiating the network twice with create_graph.

#include <pln/pln.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pln::exp::pinn {

struct NetSpec {
  int64_t in_dim = 1;
  int64_t width = 128;
  int64_t depth = 3;
  std::string norm = "pln";  ///< pln | pls | ln | none
  int64_t group = 4;         ///< features per group for pln and pls
  std::string act = "none";  ///< none | tanh | relu | sigmoid | sat | silu
  double eps = 1e-5;
  /// The activations' jets through the fused kernels (pln::functional::activation_jet);
  /// false: the composite ATen formulas, pln_bench_pinn_step's baseline. Not a key.
  bool fused_activation_jets = true;

  /// Throws std::invalid_argument naming the field.
  void validate() const;
};

/// u and its derivatives at N points: value [N], first[d] = du/dx_d and
/// second[d] = d2u/dx_d2, each [D, N].
struct Derivatives {
  torch::Tensor value, first, second;
  torch::Tensor laplacian() const { return second.sum(0); }
};

class PinnNetImpl : public torch::nn::Module {
 public:
  PinnNetImpl(const NetSpec& spec, torch::Dtype dtype);

  /// [N, in_dim] -> [N, 1].
  torch::Tensor forward(const torch::Tensor& x);
  /// u, its gradient and the diagonal of its Hessian at x [N, in_dim].
  Derivatives forward_jet(const torch::Tensor& x);

  const NetSpec& spec() const { return spec_; }
  int64_t parameter_count() const;

 private:
  torch::Tensor activate(const torch::Tensor& z) const;
  torch::Tensor normalise_jet(const torch::Tensor& jet, size_t block) const;
  torch::Tensor linear_jet(const torch::Tensor& jet, size_t layer) const;

  NetSpec spec_;
  std::vector<torch::nn::Linear> linears_;
  std::vector<pln::ParallelLN> norms_;
};
TORCH_MODULE(PinnNet);

/// act(z) applied to a jet [1 + 2D, N, w] (value, D first, D second derivatives):
/// the fused kernels, or the composite formulas where `fused` is false.
torch::Tensor activation_jet(const std::string& act, const torch::Tensor& jet, bool fused = true);

}  // namespace pln::exp::pinn
