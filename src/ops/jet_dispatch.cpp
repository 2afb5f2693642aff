// The functions of cpu/jet_kernels.h and cpu/activation_jets.h that switch to
// the chosen capability's kernels (cpu_dispatch.h). libpln only: the Python
// package's stable-ABI build has no jets.

#include "cpu/activation_jets.h"
#include "cpu/jet_kernels.h"
#include "ops/cpu_dispatch.h"

namespace pln::cpu {

template <typename T>
void jet_forward(const JetGeometry& g, const T* x, T* y, double eps, bool centering) {
  PLN_DISPATCH(jet_forward<T>, g, x, y, eps, centering)
}

template <typename T>
void jet_backward(const JetGeometry& g, const T* dy, const T* x, T* dx, double eps, bool centering) {
  PLN_DISPATCH(jet_backward<T>, g, dy, x, dx, eps, centering)
}

template <typename T>
void activation_jet_forward(JetActivation act, const ActivationJetShape& s, const T* x, T* y) {
  PLN_DISPATCH(activation_jet_forward, act, s, x, y)
}

template <typename T>
void activation_jet_backward(JetActivation act, const ActivationJetShape& s, const T* dy, const T* x, T* dx) {
  PLN_DISPATCH(activation_jet_backward, act, s, dy, x, dx)
}

template void jet_forward<float>(const JetGeometry&, const float*, float*, double, bool);
template void jet_forward<double>(const JetGeometry&, const double*, double*, double, bool);
template void jet_backward<float>(const JetGeometry&, const float*, const float*, float*, double, bool);
template void jet_backward<double>(const JetGeometry&, const double*, const double*, double*, double, bool);
template void activation_jet_forward<float>(JetActivation, const ActivationJetShape&, const float*, float*);
template void activation_jet_forward<double>(JetActivation, const ActivationJetShape&, const double*, double*);
template void activation_jet_backward<float>(JetActivation, const ActivationJetShape&, const float*, const float*,
                                             float*);
template void activation_jet_backward<double>(JetActivation, const ActivationJetShape&, const double*,
                                              const double*, double*);

}  // namespace pln::cpu
