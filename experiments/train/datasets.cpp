#include "train/datasets.h"

#include "system/atomic_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace pln::exp {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& file, const std::string& problem) {
  throw std::runtime_error(file.string() + ": " + problem);
}

// The largest data file pln reads: Fashion-MNIST's training images are 47
// MB, a CIFAR-10 batch 30 MB; 256 MiB leaves room. A file that inflates to
// more is not one of them (a gzip bomb would fill the memory first).
constexpr size_t kMaxDataBytes = size_t{256} << 20;

// The whole file, through zlib (which reads plain files as they are).
std::vector<uint8_t> read_bytes(const fs::path& file) {
  if (!fs::exists(file)) fail(file, "no such file");
  if (!fs::is_regular_file(file)) fail(file, "not a regular file");
  gzFile gz = gzopen(file.c_str(), "rb");
  if (!gz) fail(file, "cannot open");
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  for (;;) {
    const int n = gzread(gz, buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      const std::string message = gzerror(gz, &code);
      gzclose(gz);
      fail(file, "corrupt gzip stream (" + message + ")");
    }
    if (n == 0) break;
    if (bytes.size() + static_cast<size_t>(n) > kMaxDataBytes) {
      gzclose(gz);
      fail(file, fmt::format("inflates to more than {} MiB, more than any data set pln reads; refused",
                             kMaxDataBytes >> 20));
    }
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  // A gzip stream cut short reads as a short file without an error; gzclose reports it.
  if (gzclose(gz) != Z_OK) fail(file, "truncated or corrupt gzip stream");
  return bytes;
}

uint32_t big_endian(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | uint32_t(b[at + 3]);
}

torch::Tensor check_labels(torch::Tensor labels, int64_t num_classes, const fs::path& file) {
  const auto bad = (labels < 0).logical_or(labels >= num_classes).nonzero();
  if (bad.size(0) > 0) {
    const int64_t at = bad[0][0].item<int64_t>();
    fail(file, fmt::format("label {} at index {} is outside 0..{}", labels[at].item<int64_t>(), at,
                           num_classes - 1));
  }
  return labels;
}

}  // namespace

ImageSet read_idx(const fs::path& images_file, const fs::path& labels_file) {
  const auto images = read_bytes(images_file);
  if (images.size() < 16) fail(images_file, fmt::format("{} bytes, too short for an IDX image header", images.size()));
  if (big_endian(images, 0) != 0x803) {
    fail(images_file, fmt::format("magic 0x{:08x}, expected 0x00000803 (IDX images)", big_endian(images, 0)));
  }
  const int64_t n = big_endian(images, 4), rows = big_endian(images, 8), cols = big_endian(images, 12);
  if (rows < 1 || cols < 1 || rows > 4096 || cols > 4096) fail(images_file, fmt::format("implausible image size {} x {}", rows, cols));
  const uint64_t want = 16 + uint64_t(n) * uint64_t(rows) * uint64_t(cols);
  if (images.size() != want) {
    fail(images_file, fmt::format("{} bytes, a header for {} images of {} x {} needs {}", images.size(), n, rows, cols, want));
  }
  const auto labels = read_bytes(labels_file);
  if (labels.size() < 8) fail(labels_file, fmt::format("{} bytes, too short for an IDX label header", labels.size()));
  if (big_endian(labels, 0) != 0x801) {
    fail(labels_file, fmt::format("magic 0x{:08x}, expected 0x00000801 (IDX labels)", big_endian(labels, 0)));
  }
  const int64_t m = big_endian(labels, 4);
  if (labels.size() != 8 + uint64_t(m)) fail(labels_file, fmt::format("{} bytes, a header for {} labels needs {}", labels.size(), m, 8 + m));
  if (m != n) fail(labels_file, fmt::format("{} labels for {} images in {}", m, n, images_file.string()));
  ImageSet set;
  set.images = torch::from_blob(const_cast<uint8_t*>(images.data()) + 16, {n, 1, rows, cols}, torch::kUInt8).clone();
  set.labels = check_labels(
      torch::from_blob(const_cast<uint8_t*>(labels.data()) + 8, {m}, torch::kUInt8).to(torch::kInt64), 10, labels_file);
  return set;
}

ImageSet read_cifar10_batches(const std::vector<fs::path>& files) {
  constexpr int64_t kRecord = 1 + 3 * 32 * 32;
  std::vector<torch::Tensor> images, labels;
  for (const auto& file : files) {
    const auto bytes = read_bytes(file);
    if (bytes.empty() || bytes.size() % kRecord != 0) {
      fail(file, fmt::format("{} bytes, not a whole number of {}-byte CIFAR-10 records (truncated?)", bytes.size(), kRecord));
    }
    const int64_t n = static_cast<int64_t>(bytes.size()) / kRecord;
    const auto records = torch::from_blob(const_cast<uint8_t*>(bytes.data()), {n, kRecord}, torch::kUInt8);
    labels.push_back(check_labels(records.select(1, 0).to(torch::kInt64), 10, file));
    images.push_back(records.narrow(1, 1, kRecord - 1).reshape({n, 3, 32, 32}).clone());
  }
  if (files.empty()) throw std::invalid_argument("cifar10: no batch files given");
  return {torch::cat(images), torch::cat(labels), 10};
}

ImageData load_image_data(const std::string& name, const fs::path& dir) {
  if (name == "fashion-mnist") {
    const fs::path d = dir.empty() ? fs::path(kFashionMnistDir) : dir;
    if (!fs::is_directory(d)) {
      throw std::runtime_error(fmt::format("fashion-mnist: {} is not a directory (install Debian's "
                                           "dataset-fashion-mnist, or set data_dir)", d.string()));
    }
    return {name, read_idx(d / "train-images-idx3-ubyte.gz", d / "train-labels-idx1-ubyte.gz"),
            read_idx(d / "t10k-images-idx3-ubyte.gz", d / "t10k-labels-idx1-ubyte.gz")};
  }
  if (name == "cifar10") {
    if (dir.empty()) {
      throw std::runtime_error("cifar10: set data_dir to the folder holding data_batch_1.bin .. "
                               "data_batch_5.bin and test_batch.bin (nothing is downloaded)");
    }
    std::vector<fs::path> train;
    for (int i = 1; i <= 5; ++i) train.push_back(dir / fmt::format("data_batch_{}.bin", i));
    return {name, read_cifar10_batches(train), read_cifar10_batches({dir / "test_batch.bin"})};
  }
  throw std::invalid_argument("data must be one of fashion-mnist|cifar10, got '" + name + "'");
}

torch::Tensor fixed_random_labels(int64_t count, int64_t num_classes, uint64_t seed, const fs::path& file) {
  // Drawn from the seed every time: the file is a record of them, which anyone
  // with write access to its folder could have replaced, so it is compared
  // with the labels, never trusted in their place.
  std::mt19937_64 rng(seed);
  std::string drawn(static_cast<size_t>(count), '\0');
  for (auto& b : drawn) b = static_cast<char>(rng() % static_cast<uint64_t>(num_classes));
  if (fs::exists(file)) {
    if (!fs::is_regular_file(file)) fail(file, "labels_file is not a regular file");
    if (static_cast<int64_t>(fs::file_size(file)) != count) {
      fail(file, fmt::format("{} labels stored, the data set has {}; delete it to draw new ones", fs::file_size(file),
                             count));
    }
    const std::string stored = read_text(file);
    if (stored != drawn) {
      const auto differ = std::inner_product(stored.begin(), stored.end(), drawn.begin(), int64_t{0}, std::plus<>(),
                                             std::not_equal_to<>());
      fail(file, fmt::format("does not hold the random labels of label_seed {} ({} of {} differ); pln did not "
                             "write it for this seed: delete it to write them again", seed, differ, count));
    }
  } else {
    write_file_atomic(file, drawn);
  }
  return torch::from_blob(drawn.data(), {count}, torch::kUInt8).to(torch::kInt64);
}

}  // namespace pln::exp
