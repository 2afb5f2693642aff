#pragma once
// The image networks: a configurable CNN and the CIFAR VGG-16, each conv
// followed by a norm and an activation.
//
// Norms: pln / pls (PLN / PLS with `group` channels per group at every pixel,
// dim = 4, no permute copies), ln (one group of all channels at every pixel:
// the g = C limit of PLN), bn (BatchNorm2d), none. axis = "mixed" alternates,
// block by block, channel-axis PLN with PLN along the width axis: groups of
// `group` consecutive pixels of each (image, channel, row), without affine
// parameters; a width-axis block whose width is not a multiple of `group`
// groups channels instead.

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace pln::exp::images {

struct BlockSpec {
  std::string norm = "pln";  ///< pln | pls | ln | bn | none
  int64_t group = 8;
  std::string act = "none";  ///< none | relu | tanh | sat (x / sqrt(1 + x^2)) | silu
  std::string axis = "channel";  ///< channel | mixed
};

/// Appends Conv3x3 -> norm -> act to `net`, the norm's axis chosen for block
/// `index` at spatial width `spatial_width`.
void add_conv_block(torch::nn::Sequential& net, int64_t in, int64_t out, const BlockSpec& spec, int64_t index,
                    int64_t spatial_width);

/// Three stages of `depth` blocks with width, 2 width, 4 width channels,
/// average pooling between stages, global average pooling, a linear classifier.
torch::nn::Sequential make_cnn(int64_t in_channels, int64_t image_size, int64_t width, int64_t depth,
                               int64_t classes, const BlockSpec& spec);

/// VGG-16 for 32 x 32 inputs: 13 convs in stages of 64, 128, 256, 512, 512
/// channels (times width / 64), max pooling after each stage, Linear(512 w/64, classes).
torch::nn::Sequential make_vgg16(int64_t in_channels, int64_t width, int64_t classes, const BlockSpec& spec);

/// He (Kaiming normal, fan-in) initialisation of every conv and linear weight
/// times `scale`; every bias set to `bias`.
void init_weights(torch::nn::Module& net, double scale, double bias);

/// Throws std::invalid_argument naming the field.
void validate(const BlockSpec& spec, int64_t width);

}  // namespace pln::exp::images
