#include "train/image_data.h"

#include "train/datasets.h"
#include "train/transforms.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace pln::exp {

namespace {

namespace fs = std::filesystem;

fs::path default_labels_dir(const std::string& data_dir) {
  if (!data_dir.empty() && ::access(data_dir.c_str(), W_OK) == 0) return data_dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) return fs::path(cache) / "pln";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "pln";
  // Not a shared folder such as /tmp, where another user could place the file first.
  throw std::runtime_error("labels=random: neither XDG_CACHE_HOME nor HOME is set, and data_dir is not writable; "
                           "set labels_file to where the random labels are to be kept");
}

void keep_first(ImageSet& set, int64_t n) {
  if (n > 0 && n < set.size()) {
    set.images = set.images.narrow(0, 0, n);
    set.labels = set.labels.narrow(0, 0, n);
  }
}

}  // namespace

namespace key {

std::vector<Field<ImageDataConfig>> image_data() {
  return {field(&ImageDataConfig::data, choice("data", "fashion-mnist", {"fashion-mnist", "cifar10"}, "the data set")),
          field(&ImageDataConfig::data_dir,
                text("data_dir", "", "the data set's folder (\"\": Debian's fashion-mnist; cifar10 needs one)")),
          field(&ImageDataConfig::labels,
                choice("labels", "clean", {"clean", "random"}, "the data set's labels, or fixed random ones")),
          field(&ImageDataConfig::label_seed, integer("label_seed", 0, "seed of the fixed random labels")),
          field(&ImageDataConfig::labels_file,
                text("labels_file", "",
                     "file of the fixed random labels (default: beside the data, or ~/.cache/pln)")),
          field(&ImageDataConfig::n_train, integer("n_train", 0, at_least(0), "training images, the first ones (0: all)")),
          field(&ImageDataConfig::n_test, integer("n_test", 0, at_least(0), "test images, the first ones (0: all)")),
          field(&ImageDataConfig::augment, boolean("augment", false, "random crops (padding 4) and horizontal flips"))};
}

}  // namespace key

PreparedImages prepare_images(const ImageDataConfig& request, int64_t min_size) {
  auto data = load_image_data(request.data, request.data_dir);
  PreparedImages out;
  out.labels = request.labels;
  out.augment = request.augment;
  if (request.labels == "random") {
    const fs::path file =
        request.labels_file.empty()
            ? default_labels_dir(request.data_dir) /
                  fmt::format("{}-random-labels-seed{}.bin", data.name, request.label_seed)
            : fs::path(request.labels_file);
    data.train.labels = fixed_random_labels(data.train.size(), data.train.num_classes,
                                            static_cast<uint64_t>(request.label_seed), file);
    out.labels_file = file.string();
    fmt::print("random labels: {}\n", out.labels_file);
  }
  keep_first(data.train, request.n_train);
  keep_first(data.test, request.n_test);
  const auto [mean, stdev] = channel_stats(data.train.images);
  out.x_train = normalise(data.train.images, mean, stdev);
  out.x_test = normalise(data.test.images, mean, stdev);
  if (out.x_train.size(2) < min_size) {
    const int64_t pad = (min_size - out.x_train.size(2)) / 2, extra = min_size - out.x_train.size(2) - 2 * pad;
    out.x_train = torch::constant_pad_nd(out.x_train, {pad, pad + extra, pad, pad + extra}, 0);
    out.x_test = torch::constant_pad_nd(out.x_test, {pad, pad + extra, pad, pad + extra}, 0);
  }
  out.y_train = data.train.labels;
  out.y_test = data.test.labels;
  out.name = data.name;
  out.classes = data.train.num_classes;
  return out;
}

}  // namespace pln::exp
