#pragma once
// The safetensors format (the one the tensor ecosystem adopted in place of
// pickle): 8 bytes holding N, a little-endian u64; N bytes of a JSON object
// naming each tensor's dtype, shape and byte range ("data_offsets", relative
// to the data that follows the header), with an optional "__metadata__"
// object of strings; then the tensors' raw little-endian bytes.
//
// The reader trusts nothing in the file: every field is checked, and the
// ranges must cover the data exactly, in order and without overlap, before
// a caller builds anything from them. It knows no torch type, so that it can
// be fuzzed on its own (tests/fuzz).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pln::exp {

struct SafetensorsEntry {
  std::string dtype;            ///< "F32", "F64", "I64", "U8", ... (dtype_bytes knows them)
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  ///< the byte range within the data
};

struct SafetensorsFile {
  std::map<std::string, SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;      ///< where the data begins in the file: 8 + N
};

/// The header's largest size, read or written. The biggest a pln checkpoint
/// writes is pinn's paper preset's at its last checkpoint, about 2 MB (the
/// training state holds train.csv's 20,000 rows, 85 to 100 bytes each as
/// escaped JSON text; every other preset's is smaller); the limit is eight
/// times that. It bounds what parsing a crafted header can take: nlohmann's
/// values cost up to about 30 times their text (`[{},{},...]`), so under half
/// a GiB, where the Python and Rust readers' own limit, 100 MB, would allow
/// 3 GB. A run whose header would pass it (a very long one that logs every
/// step) is told to log less often or keep no checkpoint.
constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{16} << 20;
/// The most dimensions a tensor may have.
constexpr size_t kMaxSafetensorsRank = 8;

/// Bytes per element of a safetensors dtype; 0 for a name it does not know.
size_t dtype_bytes(std::string_view dtype);

/// The header of `bytes` (a whole file), checked: N within the file and the
/// limit, a JSON object (nesting limited as every record's), each tensor
/// with a known dtype, a shape of non-negative sizes whose element count does
/// not overflow and matches its byte range, the ranges inside the data and
/// together covering it without gap or overlap, and a metadata object of
/// strings. Throws std::runtime_error naming `source`, the tensor and the
/// field at fault.
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source);

/// What a reader expects of one tensor: its dtype and shape.
struct ExpectedTensor {
  std::string dtype;
  std::vector<int64_t> shape;
};

/// Throws std::runtime_error naming `source` and the tensor unless `file`
/// holds exactly the `expected` tensors (none missing, none other) with their
/// dtypes and shapes.
void check_tensors(const SafetensorsFile& file, const std::map<std::string, ExpectedTensor>& expected,
                   const std::string& source);

/// One tensor to write: its name, dtype, shape and raw bytes.
struct SafetensorsBlob {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string_view bytes;
};

/// A safetensors file of `tensors` in their order and `metadata`; the header
/// is padded with spaces so that the data starts at a multiple of 8 bytes.
/// Throws std::invalid_argument when a tensor's bytes do not match its shape,
/// and std::length_error stating both sizes when the header would be larger
/// than kMaxSafetensorsHeaderBytes (no reader of pln's would read it).
std::string safetensors_bytes(const std::vector<SafetensorsBlob>& tensors,
                              const std::map<std::string, std::string>& metadata);

}  // namespace pln::exp
