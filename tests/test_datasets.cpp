// The image data readers on tiny generated files, good and corrupt, the fixed
// random labels, normalisation and augmentation.

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <train/datasets.h>
#include <train/transforms.h>

#include <zlib.h>

#include <fstream>
#include <random>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;

std::string be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

void write_gz(const fs::path& path, const std::string& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(gz);
}

void write_plain(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string idx_images(uint32_t n, uint32_t rows, uint32_t cols) {
  std::string s = be32(0x803) + be32(n) + be32(rows) + be32(cols);
  for (uint32_t i = 0; i < n * rows * cols; ++i) s += char(i % 251);
  return s;
}

std::string idx_labels(uint32_t n, int bad_at = -1) {
  std::string s = be32(0x801) + be32(n);
  for (uint32_t i = 0; i < n; ++i) s += char(int(i) == bad_at ? 12 : i % 10);
  return s;
}

std::string cifar_records(int n, int bad_at = -1) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += char(i == bad_at ? 10 : i % 10);
    for (int p = 0; p < 3 * 32 * 32; ++p) s += char((p + i) % 256);
  }
  return s;
}

TEST(Datasets, ReadsIdxGzipAndPlain) {
  const auto dir = fresh_dir("idx");
  write_gz(dir / "img.gz", idx_images(5, 4, 3));
  write_gz(dir / "lab.gz", idx_labels(5));
  const auto set = read_idx(dir / "img.gz", dir / "lab.gz");
  EXPECT_EQ(set.images.sizes(), (std::vector<int64_t>{5, 1, 4, 3}));
  EXPECT_EQ(set.images[1][0][0][0].item<uint8_t>(), 12);  // pixel 12 of the stream
  EXPECT_EQ(set.labels[3].item<int64_t>(), 3);
  write_plain(dir / "img", idx_images(5, 4, 3));
  write_plain(dir / "lab", idx_labels(5));
  EXPECT_TRUE(torch::equal(read_idx(dir / "img", dir / "lab").images, set.images));
  fs::remove_all(dir);
}

TEST(Datasets, CorruptIdxFilesNameTheFileAndProblem) {
  const auto dir = fresh_dir("idx-bad");
  write_gz(dir / "img.gz", idx_images(5, 4, 3));
  write_gz(dir / "lab.gz", idx_labels(5));
  const auto expect = [&](const fs::path& img, const fs::path& lab, const std::string& text) {
    const auto message = error_of([&] { read_idx(img, lab); });
    EXPECT_NE(message.find(text), std::string::npos) << message;
  };
  expect(dir / "missing.gz", dir / "lab.gz", "missing.gz: no such file");
  write_gz(dir / "magic.gz", be32(0x801) + idx_images(5, 4, 3).substr(4));
  expect(dir / "magic.gz", dir / "lab.gz", "magic.gz: magic 0x00000801, expected 0x00000803");
  write_gz(dir / "short.gz", idx_images(5, 4, 3).substr(0, 40));
  expect(dir / "short.gz", dir / "lab.gz", "short.gz: 40 bytes, a header for 5 images of 4 x 3 needs 76");
  write_gz(dir / "bad-label.gz", idx_labels(5, 2));
  expect(dir / "img.gz", dir / "bad-label.gz", "bad-label.gz: label 12 at index 2 is outside 0..9");
  write_gz(dir / "four.gz", idx_labels(4));
  expect(dir / "img.gz", dir / "four.gz", "four.gz: 4 labels for 5 images");
  // A gzip stream cut in the middle.
  std::ifstream in(dir / "img.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_plain(dir / "cut.gz", gz.substr(0, gz.size() / 2));
  expect(dir / "cut.gz", dir / "lab.gz", "cut.gz:");
  fs::remove_all(dir);
}

TEST(Datasets, ReadsCifarBatchesAndRejectsBadOnes) {
  const auto dir = fresh_dir("cifar");
  write_plain(dir / "a.bin", cifar_records(3));
  write_plain(dir / "b.bin", cifar_records(2));
  const auto set = read_cifar10_batches({dir / "a.bin", dir / "b.bin"});
  EXPECT_EQ(set.images.sizes(), (std::vector<int64_t>{5, 3, 32, 32}));
  EXPECT_EQ(set.labels[4].item<int64_t>(), 1);
  EXPECT_EQ(set.images[1][0][0][1].item<uint8_t>(), 2);
  write_plain(dir / "cut.bin", cifar_records(3).substr(0, 3073 * 2 + 100));
  EXPECT_NE(error_of([&] { read_cifar10_batches({dir / "cut.bin"}); }).find("cut.bin: 6246 bytes, not a whole number of 3073-byte CIFAR-10 records"), std::string::npos);
  write_plain(dir / "label.bin", cifar_records(3, 1));
  EXPECT_NE(error_of([&] { read_cifar10_batches({dir / "label.bin"}); }).find("label.bin: label 10 at index 1 is outside 0..9"), std::string::npos);
  EXPECT_NE(error_of([&] { load_image_data("cifar10", ""); }).find("cifar10: set data_dir"), std::string::npos);
  EXPECT_NE(error_of([&] { load_image_data("cifar10", dir); }).find("data_batch_1.bin: no such file"), std::string::npos);
  EXPECT_NE(error_of([&] { load_image_data("mnist", dir); }).find("one of fashion-mnist|cifar10, got 'mnist'"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Datasets, RandomMutationsRaiseErrorsNeverCrash) {
  // A small fuzz of both parsers: flipped bytes and cut files either parse or throw.
  const auto dir = fresh_dir("fuzz");
  const std::string images = idx_images(6, 5, 5), labels = idx_labels(6), cifar = cifar_records(2);
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    auto mutate = [&](std::string s) {
      const int flips = 1 + int(rng() % 4);
      for (int f = 0; f < flips; ++f) s[rng() % s.size()] = char(rng());
      if (rng() % 3 == 0) s.resize(rng() % s.size());
      return s;
    };
    write_plain(dir / "i", mutate(images));
    write_plain(dir / "l", mutate(labels));
    write_plain(dir / "c", mutate(cifar));
    // Either a result or an error naming the file that is wrong.
    try {
      const auto set = read_idx(dir / "i", dir / "l");
      EXPECT_EQ(set.images.size(0), set.labels.size(0));
      if (set.size() > 0) {
        EXPECT_GE(set.labels.min().item<int64_t>(), 0);
        EXPECT_LT(set.labels.max().item<int64_t>(), set.num_classes);
      }
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find((dir / "i").string()) != std::string::npos ||
                  what.find((dir / "l").string()) != std::string::npos)
          << what;
    }
    try {
      read_cifar10_batches({dir / "c"});
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find((dir / "c").string()), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(Datasets, FixedRandomLabelsAreIdenticalAcrossRuns) {
  const auto dir = fresh_dir("labels");
  const auto first = fixed_random_labels(1000, 10, 3, dir / "labels.bin");
  EXPECT_TRUE(torch::equal(first, fixed_random_labels(1000, 10, 3, dir / "labels.bin")));  // read back
  // The file is checked against the seed's labels, never trusted in their
  // place: another seed's file, or one of zeros, is refused by name.
  EXPECT_NE(error_of([&] { fixed_random_labels(1000, 10, 99, dir / "labels.bin"); })
                .find("labels.bin: does not hold the random labels of label_seed 99"), std::string::npos);
  std::ofstream(dir / "zeros.bin", std::ios::binary) << std::string(1000, '\0');
  EXPECT_NE(error_of([&] { fixed_random_labels(1000, 10, 3, dir / "zeros.bin"); })
                .find("zeros.bin: does not hold the random labels of label_seed 3"), std::string::npos);
  EXPECT_NE(error_of([&] { fixed_random_labels(1000, 10, 3, dir); }).find("labels_file is not a regular file"),
            std::string::npos);
  EXPECT_TRUE(torch::equal(first, fixed_random_labels(1000, 10, 3, dir / "fresh.bin")));
  EXPECT_GE(first.min().item<int64_t>(), 0);
  EXPECT_LE(first.max().item<int64_t>(), 9);
  EXPECT_EQ(std::get<0>(torch::_unique(first)).size(0), 10);
  EXPECT_NE(error_of([&] { fixed_random_labels(999, 10, 3, dir / "labels.bin"); }).find("1000 labels stored, the data set has 999"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Datasets, FashionMnistFromTheDebianPackage) {
  if (!fs::exists(fs::path(kFashionMnistDir) / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/bootstrap installs it)";
  }
  const auto data = load_image_data("fashion-mnist", "");
  EXPECT_EQ(data.train.images.sizes(), (std::vector<int64_t>{60000, 1, 28, 28}));
  EXPECT_EQ(data.test.images.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  EXPECT_TRUE(torch::equal(torch::bincount(data.train.labels), torch::full({10}, 6000, torch::kInt64)));
}

TEST(Datasets, NormaliseAndAugment) {
  torch::manual_seed(0);
  const auto images = torch::randint(0, 256, {16, 3, 8, 8}, torch::kUInt8);
  const auto [mean, std] = channel_stats(images);
  const auto x = normalise(images, mean, std, torch::kFloat64);
  EXPECT_LT(x.mean({0, 2, 3}).abs().max().item<double>(), 1e-9);
  EXPECT_NEAR(x.std({0, 2, 3}, false).mean().item<double>(), 1.0, 1e-9);
  auto generator = at::detail::createCPUGenerator(7);
  const auto a = augment(x, 2, generator);
  EXPECT_EQ(a.sizes(), x.sizes());
  // Every augmented image is a shifted (and maybe flipped) copy: its values are the image's or padding.
  EXPECT_LE(a.abs().sum().item<double>(), x.abs().sum().item<double>() + 1e-9);
}

}  // namespace
}  // namespace pln::exp
