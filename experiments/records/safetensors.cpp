#include "records/safetensors.h"

#include "records/json.h"
#include "system/printable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace pln::exp {

size_t dtype_bytes(std::string_view dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "U8" || dtype == "I8" || dtype == "BOOL") return 1;
  return 0;
}

namespace {

// The first 8 bytes' little-endian u64.
uint64_t header_length(std::string_view bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  return n;
}

// A JSON value that is a non-negative integer, as nlohmann holds either kind.
bool natural(const Config& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source) {
  auto corrupt = [&](const std::string& why) {
    return std::runtime_error(fmt::format("{}: not a safetensors file pln can read: {}", source, why));
  };
  if (bytes.size() < 8) throw corrupt(fmt::format("{} bytes, fewer than the 8 of the header's length", bytes.size()));
  const uint64_t n = header_length(bytes);
  if (n > kMaxSafetensorsHeaderBytes) {
    throw corrupt(fmt::format("the header's length ({} bytes) is over the limit of {}", n, kMaxSafetensorsHeaderBytes));
  }
  if (n > bytes.size() - 8) {
    throw corrupt(fmt::format("the header's length ({} bytes) runs past the end of the file ({} bytes)", n,
                              bytes.size()));
  }
  const std::string_view text = bytes.substr(8, n);
  if (text.empty() || text.front() != '{') throw corrupt("the header is not a JSON object");
  const Config header = parse_json_text(std::string(text), source + ": header");
  if (!header.is_object()) throw corrupt("the header is not a JSON object");

  SafetensorsFile file;
  file.data_start = 8 + n;
  const uint64_t data_size = bytes.size() - file.data_start;
  for (const auto& item : header.items()) {
    const std::string name = printable(item.key());
    const Config& value = item.value();
    if (item.key() == "__metadata__") {
      if (!value.is_object()) throw corrupt("__metadata__ is not an object");
      for (const auto& entry : value.items()) {
        if (!entry.value().is_string()) {
          throw corrupt(fmt::format("__metadata__.{} is not a string", printable(entry.key())));
        }
        file.metadata[entry.key()] = entry.value().get<std::string>();
      }
      continue;
    }
    if (item.key().empty()) throw corrupt("a tensor has an empty name");
    if (!value.is_object()) throw corrupt(fmt::format("tensor '{}' is not an object", name));
    for (const auto& field : value.items()) {
      if (field.key() != "dtype" && field.key() != "shape" && field.key() != "data_offsets") {
        throw corrupt(fmt::format("tensor '{}' has an unknown field '{}'", name, printable(field.key())));
      }
    }
    SafetensorsEntry entry;
    const auto dtype = value.find("dtype");
    if (dtype == value.end() || !dtype->is_string() || dtype_bytes(dtype->get<std::string>()) == 0) {
      throw corrupt(fmt::format("tensor '{}': dtype is {}, not one of F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 "
                                "BOOL", name, dtype == value.end() ? "absent" : printable(dtype->dump())));
    }
    entry.dtype = dtype->get<std::string>();
    const auto shape = value.find("shape");
    if (shape == value.end() || !shape->is_array() || shape->size() > kMaxSafetensorsRank ||
        !std::all_of(shape->begin(), shape->end(), natural)) {
      throw corrupt(fmt::format("tensor '{}': shape is not a list of at most {} non-negative integers", name,
                                kMaxSafetensorsRank));
    }
    uint64_t elements = 1;
    bool overflow = false;
    for (const auto& size : *shape) {
      const uint64_t s = size.get<uint64_t>();
      overflow = overflow || s > uint64_t{INT64_MAX} || __builtin_mul_overflow(elements, s, &elements);
      entry.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(s, INT64_MAX)));
    }
    const auto offsets = value.find("data_offsets");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 || !natural((*offsets)[0]) ||
        !natural((*offsets)[1])) {
      throw corrupt(fmt::format("tensor '{}': data_offsets is not a pair of non-negative integers", name));
    }
    entry.begin = (*offsets)[0].get<uint64_t>();
    entry.end = (*offsets)[1].get<uint64_t>();
    if (entry.begin > entry.end || entry.end > data_size) {
      throw corrupt(fmt::format("tensor '{}': data_offsets [{}, {}] are not a range inside the {} bytes of data",
                                name, entry.begin, entry.end, data_size));
    }
    uint64_t expected_bytes = 0;
    if (overflow || __builtin_mul_overflow(elements, dtype_bytes(entry.dtype), &expected_bytes) ||
        expected_bytes != entry.end - entry.begin) {
      throw corrupt(fmt::format("tensor '{}': shape {} of {} takes {} bytes, data_offsets [{}, {}] hold {}", name,
                                shape_text(entry.shape), entry.dtype,
                                overflow ? std::string("more than 2^64") : std::to_string(expected_bytes),
                                entry.begin, entry.end, entry.end - entry.begin));
    }
    file.tensors.emplace(item.key(), std::move(entry));
  }
  // The ranges, in order, must tile the data: no overlap (two tensors sharing
  // bytes), no gap (bytes that belong to nothing) and nothing after the last.
  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> order;
  for (const auto& [name, entry] : file.tensors) order.emplace_back(&name, &entry);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second->begin, a.second->end) < std::tie(b.second->begin, b.second->end);
  });
  uint64_t at = 0;
  for (const auto& [name, entry] : order) {
    if (entry->begin != at) {
      throw corrupt(fmt::format("tensor '{}': data_offsets [{}, {}] {} the previous tensor's, which ends at {}",
                                printable(*name), entry->begin, entry->end, entry->begin < at ? "overlap" : "leave a gap after",
                                at));
    }
    at = entry->end;
  }
  if (at != data_size) {
    throw corrupt(fmt::format("the tensors cover {} bytes of data, the file holds {}", at, data_size));
  }
  return file;
}

void check_tensors(const SafetensorsFile& file, const std::map<std::string, ExpectedTensor>& expected,
                   const std::string& source) {
  for (const auto& [name, want] : expected) {
    const auto it = file.tensors.find(name);
    if (it == file.tensors.end()) throw std::runtime_error(fmt::format("{}: tensor '{}' is missing", source, name));
    if (it->second.dtype != want.dtype || it->second.shape != want.shape) {
      throw std::runtime_error(fmt::format("{}: tensor '{}' is {} {}, this run's is {} {}", source, name,
                                           it->second.dtype, shape_text(it->second.shape), want.dtype,
                                           shape_text(want.shape)));
    }
  }
  for (const auto& [name, entry] : file.tensors) {
    if (!expected.count(name)) {
      throw std::runtime_error(fmt::format("{}: tensor '{}' is not one of this run's", source, printable(name)));
    }
  }
}

std::string safetensors_bytes(const std::vector<SafetensorsBlob>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t at = 0;
  for (const auto& t : tensors) {
    uint64_t elements = 1;
    for (const int64_t s : t.shape) elements *= static_cast<uint64_t>(s);
    if (elements * dtype_bytes(t.dtype) != t.bytes.size() || dtype_bytes(t.dtype) == 0) {
      throw std::invalid_argument(fmt::format("safetensors: tensor '{}' has {} bytes, not those of {} {}", t.name,
                                              t.bytes.size(), t.dtype, shape_text(t.shape)));
    }
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + t.bytes.size()}}};
    at += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxSafetensorsHeaderBytes) {
    throw std::length_error(fmt::format("safetensors: the header would be {} bytes, over the limit of {} that pln "
                                        "reads", text.size(), kMaxSafetensorsHeaderBytes));
  }
  std::string out;
  out.reserve(8 + text.size() + at);
  for (int i = 0; i < 8; ++i) out += static_cast<char>((text.size() >> (8 * i)) & 0xff);
  out += text;
  for (const auto& t : tensors) out.append(t.bytes);
  return out;
}

}  // namespace pln::exp
