#pragma once
// The image data every classifier experiment trains on, prepared from a
// configuration: the data set, clean or fixed random labels, subsets,
// per-channel normalisation with the training set's statistics, zero padding
// up to a minimum size.
//
// Config keys: data (fashion-mnist | cifar10), data_dir, labels (clean |
// random), label_seed, labels_file (default: beside the data when writable,
// else under $XDG_CACHE_HOME/pln or ~/.cache/pln), n_train, n_test (0: all),
// declared by the key:: functions below for a family's key table.

#include "spec/config.h"
#include "spec/keys.h"

#include <torch/torch.h>

#include <string>

namespace pln::exp {

struct PreparedImages {
  std::string name;            ///< the data set
  torch::Tensor x_train, y_train, x_test, y_test;  ///< float32 [N, C, H, W] and int64 [N]
  int64_t classes = 10;
  std::string labels_file;     ///< the fixed random labels' file; "" for clean labels
};

namespace key {
Key data();         ///< fashion-mnist | cifar10
Key data_dir();
Key labels();       ///< clean | random
Key label_seed();
Key labels_file();
Key n_train();      ///< >= 0, 0: all
Key n_test();       ///< >= 0, 0: all
/// The keys every image family takes first, in config.json's order: the
/// seven above and `augment`.
std::vector<Key> image_data();
}  // namespace key

/// Loads the data the (validated) keys name; throws std::runtime_error naming
/// the file at fault.
PreparedImages prepare_images(const Config& config, int64_t min_size);

}  // namespace pln::exp
