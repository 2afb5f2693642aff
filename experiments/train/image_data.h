#pragma once
// The image data every classifier experiment trains on, prepared from a
// configuration: the data set, clean or fixed random labels, subsets,
// per-channel normalisation with the training set's statistics, zero padding
// up to a minimum size.
//
// Its keys, bound to ImageDataConfig's members by key::image_data() for a family's
// schema: data (fashion-mnist | cifar10), data_dir, labels (clean | random),
// label_seed, labels_file (default: beside the data when writable, else under
// $XDG_CACHE_HOME/pln or ~/.cache/pln), n_train, n_test (0: all), augment.

#include "spec/schema.h"

#include <torch/torch.h>

#include <string>

namespace pln::exp {

/// The data a run asks for.
struct ImageDataConfig {
  std::string data, data_dir, labels, labels_file;
  int64_t label_seed = 0, n_train = 0, n_test = 0;
  bool augment = false;
};

struct PreparedImages {
  std::string name;            ///< the data set
  torch::Tensor x_train, y_train, x_test, y_test;  ///< float32 [N, C, H, W] and int64 [N]
  int64_t classes = 10;
  std::string labels;          ///< clean | random
  std::string labels_file;     ///< the fixed random labels' file; "" for clean labels
  bool augment = false;        ///< training batches are randomly cropped and flipped
};

namespace key {
/// The keys every image family takes first, in config.json's order.
std::vector<Field<ImageDataConfig>> image_data();
}  // namespace key

/// Loads the data `request` names (validated by its family's schema); throws
/// std::runtime_error naming the file at fault.
PreparedImages prepare_images(const ImageDataConfig& request, int64_t min_size);

}  // namespace pln::exp
