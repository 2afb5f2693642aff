#pragma once
// Parallel Layer Normalization for LibTorch: the one header users include.
// (<pln/testing.h>, for tests and benchmarks, is not part of it.)

#include <pln/activation_jet.h>
#include <pln/functional.h>
#include <pln/jet.h>
#include <pln/kernels.h>
#include <pln/modules.h>
#include <pln/options.h>
