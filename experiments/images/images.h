#pragma once
// `pln cnn` and `pln vgg`: image classification experiments.

#include "common/experiment.h"

namespace pln::exp {

Experiment cnn_experiment();
Experiment vgg_experiment();

}  // namespace pln::exp
