#pragma once
// Image data sets read from their standard files, offline:
//   Fashion-MNIST: gzip'd IDX files (Debian's dataset-fashion-mnist installs
//     them under /usr/share/datasets/fashion-mnist);
//   CIFAR-10: the binary distribution, data_batch_1..5.bin and test_batch.bin,
//     3,073-byte records (label, then 3 x 32 x 32 pixels).
// Every reader checks what it reads: a missing, truncated or corrupt file (not
// gzip, wrong magic, wrong length, a label out of range, image and label
// counts that differ) raises std::runtime_error naming the file and the
// problem; nothing is loaded in part.

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace pln::exp {

struct ImageSet {
  torch::Tensor images;  ///< [N, C, H, W] uint8
  torch::Tensor labels;  ///< [N] int64 in [0, num_classes)
  int64_t num_classes = 10;
  int64_t size() const { return labels.size(0); }
};

struct ImageData {
  std::string name;
  ImageSet train, test;
};

constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Reads one IDX image file and its label file (gzip'd or plain).
ImageSet read_idx(const std::filesystem::path& images, const std::filesystem::path& labels);
/// Reads CIFAR-10 binary batch files and concatenates them.
ImageSet read_cifar10_batches(const std::vector<std::filesystem::path>& files);

/// "fashion-mnist" (dir "" = kFashionMnistDir) or "cifar10" (dir required).
ImageData load_image_data(const std::string& name, const std::filesystem::path& dir);

/// Labels drawn once, uniformly, from `seed`, and kept in `file` (created
/// atomically when absent; when present, it must hold exactly the labels the
/// seed draws, or this throws naming it), so every run that names the
/// same file trains on the same labels.
torch::Tensor fixed_random_labels(int64_t count, int64_t num_classes, uint64_t seed,
                                  const std::filesystem::path& file);

}  // namespace pln::exp
