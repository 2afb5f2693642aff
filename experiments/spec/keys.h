#pragma once
// A family's key table: every configuration key it takes, in one visible
// place, one line per key, with its type (given by its default), its default,
// the values it allows and a line of help. From the table come the defaults
// the presets change, `pln <family> --help`, the parsing of `--set key=value`
// and the validation of a whole configuration before anything is written or
// loaded. Checks across keys that a table cannot state (a width divisible by
// the group, amp needing a CUDA device) are the family's `check` function,
// run after the table's own checks. A family binds each key to the member of
// its configuration struct that holds it, and writes its checks against that
// struct, through spec/schema.h.
//
//   choice("problem", "helmholtz1d", {"helmholtz1d", "helmholtz2d"}, "the PDE")
//   integer("width", 128, at_least(1), "features of each hidden layer")
//   number("bc_weight", 1.0, at_least(0), "weight of the boundary loss")
//
// Errors: a table's messages are phrased as "<family>: <key> must be ...". A
// check throws ConfigError with the message alone and the table prefixes the
// family, at one place; any other exception passes through as it is.

#include "spec/config.h"

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pln::exp {

/// An error in a configuration, phrased without the family's name, which the
/// key table the configuration belongs to puts in front.
struct ConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// The values a numeric key allows: an interval, either side open, closed or absent.
struct Range {
  std::optional<double> low, high;
  bool low_open = false, high_open = false;
};

Range any_value();                            ///< no bound
Range at_least(double low);                   ///< >= low
Range above(double low);                      ///< > low
Range closed(double low, double high);        ///< [low, high]
Range right_open(double low, double high);    ///< [low, high)
Range left_open(double low, double high);     ///< (low, high]

/// One key: its name, its default (whose JSON type is the key's type:
/// integer, number, boolean or text), what it allows and a line of help.
struct Key {
  std::string name;
  Config value;
  std::string help;
  Range range;                        ///< integer and number keys
  std::vector<std::string> choices;   ///< text keys: the allowed values (empty: any text)
  /// Text keys: a check of the text's form; throws ConfigError (or an error phrased in full).
  std::function<void(const std::string& text)> check_text;
  std::string allowed_text;           ///< --help's description of what check_text allows
};

Key integer(std::string name, int64_t value, Range range, std::string help);
Key integer(std::string name, int64_t value, std::string help);     ///< any integer
Key number(std::string name, double value, Range range, std::string help);
Key number(std::string name, double value, std::string help);       ///< any finite number
Key boolean(std::string name, bool value, std::string help);
Key choice(std::string name, std::string value, std::vector<std::string> allowed, std::string help);
Key text(std::string name, std::string value, std::string help);    ///< any text
/// Text whose form `check` checks (throwing); `allowed` says what it allows, for --help.
Key text(std::string name, std::string value, std::string allowed, std::function<void(const std::string&)> check,
         std::string help);

class KeyTable {
 public:
  using Check = std::function<void(const Config& config)>;

  KeyTable() = default;
  /// Throws std::logic_error when a key is named twice, a default is not of
  /// its key's kind, or a default is outside what its key allows.
  KeyTable(std::string family, std::vector<Key> keys, Check check = {});

  const std::string& family() const { return family_; }
  const std::vector<Key>& keys() const { return keys_; }
  const Key* find(const std::string& name) const;

  /// Every key with its default, in the table's order (config.json's order).
  Config defaults() const;

  /// Applies `key=value`, parsed as the key's type; throws
  /// std::invalid_argument "<family>: unknown key 'k'; known keys: ..." or
  /// "<family>: key 'k' expects an integer, got 'x'". The value's range is
  /// validate()'s to check.
  void apply(Config& config, const std::string& assignment) const;
  void apply(Config& config, const std::vector<std::string>& assignments) const;

  /// Checks a whole configuration: the table's keys and no other, each of its
  /// type, in its range or among its values, then the family's check.
  /// Throws std::invalid_argument naming the family and the key.
  void validate(const Config& config) const;

  /// `pln <family> --help`'s table: each key's name, type, default, what it allows and its help.
  std::string help() const;

 private:
  std::string family_;
  std::vector<Key> keys_;
  Check check_;
};

/// The most elements one tensor that a configuration sizes may hold: 2^31,
/// 8 GiB of float32, above what any preset needs (the largest, pinn's paper
/// NTK, holds 3e7). A configuration over it (n_interior=1e9, or a record's
/// K=2^62) is refused before anything is allocated, rather than left to
/// exhaust the machine's memory; `--max-elements N` raises it for one run.
constexpr int64_t kDefaultElementCeiling = int64_t{1} << 31;
int64_t element_ceiling();
void set_element_ceiling(int64_t ceiling);

/// Throws ConfigError naming `what` (e.g. "n_interior x width") when the
/// product of `factors` overflows 64 bits or exceeds element_ceiling().
void check_elements(const std::string& what, const std::vector<int64_t>& factors);

/// What one layer costs at least, counted in elements against the ceiling:
/// a module's bookkeeping (its names, holders and autograd nodes, a few KiB),
/// so that a million layers of one feature are refused as surely as one
/// layer of a million squared.
constexpr int64_t kLayerOverheadElements = 1024;

/// Throws ConfigError naming `what` (e.g. "the network (depth x width^2)")
/// when `layers` layers of the product of `per_layer` parameters each (at
/// least kLayerOverheadElements each) exceed element_ceiling() or overflow.
void check_network_size(const std::string& what, int64_t layers, const std::vector<int64_t>& per_layer);

/// Throws ConfigError naming `key` when its `value` is beyond float32's range:
/// the optimisers multiply a learning rate into float32 parameters, where a
/// larger one would fail mid-run in LibTorch, naming no key. For the keys of
/// a family (or a dtype) that computes in float32.
void check_float32_range(const std::string& key, double value);

/// The rule every family with grouped norms shares: where `norm` is pln or
/// pls, `group` is >= 1 and divides `width`. Throws ConfigError "width (10)
/// must be a positive multiple of group (4)".
void check_group_divides(const std::string& norm, int64_t width, int64_t group);

/// The key's type as --help names it: integer, number, bool or text.
std::string type_name(const Key& key);
/// What the key allows, as --help and the errors write it: ">= 1", "in [0, 1)",
/// "a|b|c", or "" for anything of its type.
std::string allowed_text(const Key& key);

}  // namespace pln::exp
