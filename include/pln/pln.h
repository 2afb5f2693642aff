#pragma once
// Parallel Layer Normalization for LibTorch: the one header users include.

#include <pln/functional.h>
#include <pln/jet.h>
#include <pln/modules.h>
#include <pln/options.h>
