#pragma once
// A family's configuration as a struct. Each key of its key table (spec/keys.h)
// is bound, once, to the member that holds its value; the table gives --help,
// --set, the presets and the validation, and the schema reads a validated
// configuration into the struct. A run then reads `config.width`, which the
// compiler follows, and a key's name is written in one place only.
//
//   struct PinnConfig { std::string problem; int64_t width; Schedule schedule; ... };
//
//   const Schema<PinnConfig>& schema() {
//     static const Schema<PinnConfig> s("pinn", {
//         field(&PinnConfig::problem, choice("problem", "helmholtz1d", {...}, "the PDE")),
//         field(&PinnConfig::width, integer("width", 128, at_least(1), "features of each hidden layer")),
//         field(&PinnConfig::schedule, key::lr(1e-3)),  // a key of a shared part (train/schedule.h)
//         ...},
//         [](const PinnConfig& c) { check_group_divides(c.norm, c.width, c.group); });
//     return s;
//   }
//
// Records stay JSON (config.json holds the table's keys in its order); the
// struct is how a run reads them.

#include "spec/config.h"
#include "spec/keys.h"

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace pln::exp {

/// A key bound to the member of `S` that holds its value.
template <class S>
struct Field {
  Key key;
  std::function<void(S& into, const Config& value)> read;
};

namespace detail {

template <class T>
T value_as(const Config& config, const std::string& key) {
  if constexpr (std::is_same_v<T, int64_t>) return get_int(config, key);
  if constexpr (std::is_same_v<T, double>) return get_double(config, key);
  if constexpr (std::is_same_v<T, bool>) return get_bool(config, key);
  if constexpr (std::is_same_v<T, std::string>) return get_string(config, key);
}

template <class T>
bool holds(const Config& value) {
  if constexpr (std::is_same_v<T, int64_t>) return value.is_number_integer();
  if constexpr (std::is_same_v<T, double>) return value.is_number_float();
  if constexpr (std::is_same_v<T, bool>) return value.is_boolean();
  if constexpr (std::is_same_v<T, std::string>) return value.is_string();
}

}  // namespace detail

/// Binds `key` to `member`, whose type must be the key's: int64_t for an
/// integer, double for a number, bool, or std::string for text and choices.
/// Throws std::logic_error naming the key when it is not.
template <class S, class T>
Field<S> field(T S::*member, Key key) {
  static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, bool> ||
                    std::is_same_v<T, std::string>,
                "a key's member is int64_t, double, bool or std::string");
  if (!detail::holds<T>(key.value)) {
    throw std::logic_error(fmt::format("key '{}' is bound to a member of another type than its default's", key.name));
  }
  std::string name = key.name;
  return {std::move(key),
          [member, name](S& into, const Config& config) { into.*member = detail::value_as<T>(config, name); }};
}

/// A key of a part that several families share (the schedule, the image
/// data), bound within `S` through the member that holds the part.
template <class S, class P>
Field<S> field(P S::*part, Field<P> inner) {
  return {std::move(inner.key),
          [part, read = std::move(inner.read)](S& into, const Config& config) { read(into.*part, config); }};
}

/// Every key of a shared part, in its order, bound within `S`.
template <class S, class P>
std::vector<Field<S>> fields(P S::*part, std::vector<Field<P>> inner) {
  std::vector<Field<S>> bound;
  for (auto& f : inner) bound.push_back(field(part, std::move(f)));
  return bound;
}

/// Concatenates lists of fields, keeping their order (config.json's).
template <class S>
std::vector<Field<S>> concat(std::vector<Field<S>> first, std::vector<Field<S>> then) {
  for (auto& f : then) first.push_back(std::move(f));
  return first;
}

/// A family's key table with every key bound to a member of `S`, and the
/// family's checks across keys written against `S`.
template <class S>
class Schema {
 public:
  /// Throws ConfigError with the message alone; the table names the family.
  using Check = std::function<void(const S& config)>;

  /// Throws std::logic_error as KeyTable does (field() has already refused a
  /// key bound to a member of another type).
  Schema(std::string family, std::vector<Field<S>> bound, Check check = {}) {
    auto binding = std::make_shared<Binding>();
    std::vector<Key> keys;
    for (auto& f : bound) {
      keys.push_back(f.key);
      binding->readers.push_back(std::move(f.read));
    }
    binding->check = std::move(check);
    KeyTable::Check table_check;
    if (binding->check) table_check = [binding](const Config& c) { binding->check(binding->fill(c)); };
    table_ = KeyTable(std::move(family), std::move(keys), std::move(table_check));
    binding_ = std::move(binding);
  }

  /// --help, --set, presets and validation: the keys without their members.
  const KeyTable& table() const { return table_; }

  /// Validates `config` (KeyTable::validate) and reads it into an `S`.
  S read(const Config& config) const {
    table_.validate(config);
    return binding_->fill(config);
  }

 private:
  struct Binding {
    std::vector<std::function<void(S&, const Config&)>> readers;
    Check check;
    S fill(const Config& config) const {
      S s{};
      for (const auto& read : readers) read(s, config);
      return s;
    }
  };
  std::shared_ptr<const Binding> binding_;
  KeyTable table_;
};

}  // namespace pln::exp
