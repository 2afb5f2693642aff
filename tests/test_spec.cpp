// Key tables (spec/keys.h): --set on a toy table, and every family's table against
// its presets, grids and records: defaults of their keys' types, valid presets and
// grid cells, bad values refused before anything is written, config.json's key order.

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <records/csv.h>
#include <records/json.h>
#include <run/run.h>
#include <spec/config.h>
#include <spec/experiment.h>
#include <spec/keys.h>
#include <spec/schema.h>
#include <sweep/cells.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;

// ------------------------------------------------------------ configuration

// A key table of three keys, as a family declares its own (spec/keys.h).
KeyTable toy_keys() {
  return KeyTable("pinn", {integer("width", 128, at_least(1), "features"), number("lr", 1e-3, above(0), "step size"),
                           text("norm", "pln", "the norm"), boolean("affine", false, "per-feature weight and bias")});
}

TEST(Config, OverridesParseAsTheKeysType) {
  const auto keys = toy_keys();
  Config c = keys.defaults();
  keys.apply(c, {"width=64", "lr=3e-3", "norm=ln", "affine=true"});
  EXPECT_EQ(get_int(c, "width"), 64);
  EXPECT_DOUBLE_EQ(get_double(c, "lr"), 3e-3);
  EXPECT_EQ(get_string(c, "norm"), "ln");
  EXPECT_TRUE(get_bool(c, "affine"));
  keys.apply(c, "lr=1");  // an integer literal for a number key stays a number
  EXPECT_TRUE(c["lr"].is_number_float());
}

TEST(Config, BadOverridesNameTheProblem) {
  const auto keys = toy_keys();
  Config c = keys.defaults();
  const auto error = [&](const std::string& set) { return error_of([&] { keys.apply(c, set); }); };
  EXPECT_NE(error("widht=3").find("pinn: unknown key 'widht'; known keys: width, lr, norm, affine"), std::string::npos);
  EXPECT_NE(error("width=12.5").find("key 'width' expects an integer, got '12.5'"), std::string::npos);
  EXPECT_NE(error("lr=fast").find("key 'lr' expects a finite number, got 'fast'"), std::string::npos);
  EXPECT_NE(error("lr=nan").find("expects a finite number"), std::string::npos);
  EXPECT_NE(error("affine=maybe").find("expects true or false"), std::string::npos);
  EXPECT_NE(error("width").find("--set expects key=value, got 'width'"), std::string::npos);
}

// Found by fuzzing --set (tests/fuzz/set_value.cpp): text that JSON cannot
// hold was accepted, and writing config.json then failed naming nothing.
TEST(Config, TextThatIsNotUtf8OrHoldsControlsIsRefusedNamingTheKey) {
  const auto keys = toy_keys();
  for (const std::string bad : {std::string("/t\xff\xff\xff"), std::string("pln\x1b[2J"), std::string("a\0b", 3)}) {
    Config c = keys.defaults();
    keys.apply(c, "norm=" + bad);
    const auto message = error_of([&] { keys.validate(c); });
    EXPECT_NE(message.find("pinn: norm must be UTF-8 text without control characters, got '"), std::string::npos)
        << message;
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  }
}

TEST(Config, ValueTextRoundTrips) {
  const auto keys = toy_keys();
  for (double v : {1e-3, 3e-4, 0.1, 1.0 / 3.0, 2.5e-7}) {
    Config c = keys.defaults();
    keys.apply(c, "lr=" + value_text(Config(v)));
    EXPECT_EQ(get_double(c, "lr"), v);
  }
}

// ------------------------------------------------------------- key tables

TEST(Spec, EveryKeyHasADefaultOfItsDeclaredType) {
  for (const auto& e : experiments()) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(e.keys.family(), e.name);
    ASSERT_FALSE(e.keys.keys().empty());
    const Config defaults = e.keys.defaults();
    ASSERT_EQ(defaults.size(), e.keys.keys().size());
    for (const auto& key : e.keys.keys()) {
      SCOPED_TRACE(key.name);
      const auto& value = defaults.at(key.name);
      const auto type = type_name(key);
      if (type == "integer") EXPECT_TRUE(value.is_number_integer());
      else if (type == "number") EXPECT_TRUE(value.is_number_float());
      else if (type == "bool") EXPECT_TRUE(value.is_boolean());
      else EXPECT_TRUE(value.is_string()) << type;
      EXPECT_FALSE(key.help.empty());
      // The default, written as --set writes it, reads back as itself.
      Config again = defaults;
      e.keys.apply(again, key.name + "=" + value_text(value));
      EXPECT_EQ(again.at(key.name), value);
      EXPECT_EQ(again.at(key.name).type(), value.type());
    }
    EXPECT_NO_THROW(e.keys.validate(defaults));
    // --help lists every key with its default.
    const auto help = e.help();
    for (const auto& key : e.keys.keys()) EXPECT_NE(help.find("  " + key.name + " "), std::string::npos) << key.name;
    for (const auto& p : e.presets) EXPECT_NE(help.find("  " + p.name + ": "), std::string::npos) << p.name;
  }
}

TEST(Spec, EveryPresetChangesOnlyKeysOfTheTableWithValuesItAccepts) {
  for (const auto& e : experiments()) {
    for (const auto& p : e.presets) {
      SCOPED_TRACE(e.name + " preset " + p.name);
      for (const auto& item : p.changes.items()) {
        const Key* key = e.keys.find(item.key());
        ASSERT_NE(key, nullptr) << item.key();
        EXPECT_EQ(item.value().type(), key->value.type()) << item.key();
        // A preset's change is what `--set` of its text would give.
        Config set = e.keys.defaults();
        e.keys.apply(set, item.key() + "=" + value_text(item.value()));
        EXPECT_EQ(set.at(item.key()), item.value()) << item.key();
      }
      EXPECT_NO_THROW(e.keys.validate(e.preset(p.name)));
      EXPECT_NO_THROW(resolve_config(e, p.name, {}));
    }
  }
}

TEST(Spec, EveryGridCellResolves) {
  for (const auto& e : experiments()) {
    for (const auto& [name, spec] : e.grids) {
      SCOPED_TRACE(e.name + " grid " + name);
      EXPECT_NO_THROW(e.preset(spec.preset));
      for (const auto& cell : expand_grid(spec)) EXPECT_NO_THROW(resolve_config(e, spec.preset, cell.sets)) << cell.id;
    }
  }
}

// A value each key refuses: below its lower bound, above its upper one, not
// among its values, not of its type; "" when it takes any value of its type.
std::string refused_value(const Key& key) {
  const auto type = type_name(key);
  if (type == "bool") return "maybe";
  if (type == "integer" || type == "number") {
    // A step of at least the bound's own size: -3.4e38 - 1 is -3.4e38 again.
    const auto step = [](double bound) { return std::max(1.0, std::abs(bound)); };
    if (key.range.low) {
      return value_text(key.value.is_number_integer() ? Config(int64_t(*key.range.low) - 1)
                                                      : Config(*key.range.low - step(*key.range.low)));
    }
    if (key.range.high) {
      return value_text(key.value.is_number_integer() ? Config(int64_t(*key.range.high) + 1)
                                                      : Config(*key.range.high + step(*key.range.high)));
    }
    return "twelve";
  }
  if (!key.choices.empty() || key.check_text) return "bogus";
  return "";
}

TEST(Spec, ABadValueIsRefusedBeforeAnythingIsWritten) {
  const auto root = fresh_dir("spec-refused");
  for (const auto& e : experiments()) {
    std::vector<std::string> bad = {"amp=bf16"};  // on the cpu device: a check across keys
    if (!e.keys.find("amp")) bad.clear();
    for (const auto& key : e.keys.keys()) {
      const auto value = refused_value(key);
      if (!value.empty()) bad.push_back(key.name + "=" + value);
    }
    EXPECT_GE(bad.size(), 10u) << e.name;
    for (const auto& set : bad) {
      SCOPED_TRACE(e.name + " --set " + set);
      RunRequest request;
      request.preset = "smoke";
      request.sets = {set};
      request.out = root / e.name;
      const auto message = error_of([&] { run_experiment(e, request); });
      const auto name = set.substr(0, set.find('='));
      EXPECT_NE(message.find(name), std::string::npos) << message;
      EXPECT_FALSE(fs::exists(request.out)) << message;
    }
  }
  // The table's errors name the family once, in front.
  const auto message = error_of([] { resolve_config(find_experiment("vgg"), "smoke", {"act=swish"}); });
  EXPECT_EQ(message, "vgg: act must be one of none|relu|tanh|sat|silu, got 'swish'");
  EXPECT_EQ(error_of([] { resolve_config(find_experiment("pinn"), "smoke", {"steps=0"}); }),
            "pinn: steps must be >= 1, got 0");
  EXPECT_EQ(error_of([] { resolve_config(find_experiment("vit"), "smoke", {"drop_path=1"}); }),
            "vit: drop_path must be in [0, 1), got 1");
  EXPECT_EQ(error_of([] { resolve_config(find_experiment("cnn"), "smoke", {"gamma=0"}); }),
            "cnn: gamma must be in (0, 1], got 0");
  EXPECT_EQ(error_of([] { resolve_config(find_experiment("fourier"), "smoke", {"lr=0"}); }),
            "fourier: lr must be > 0, got 0");
  // Values float32 parameters cannot hold are refused by key, before the run
  // (not mid-run by LibTorch, naming none); a subnormal one is a number.
  EXPECT_EQ(error_of([] { resolve_config(find_experiment("fourier"), "smoke", {"lr=1e308"}); }),
            "fourier: lr (1e+308) is beyond the range of float32 (3.4028235e+38), in which the network computes");
  EXPECT_NO_THROW(resolve_config(find_experiment("fourier"), "smoke", {"lr=1e308", "dtype=float64"}));
  EXPECT_EQ(error_of([] { resolve_config(find_experiment("vgg"), "smoke", {"bias_init=1e308"}); }),
            "vgg: bias_init must be in [-3.4028234663852886e+38, 3.4028234663852886e+38], got 1e+308");
  EXPECT_EQ(resolve_config(find_experiment("pinn"), "smoke", {"lr=1e-310"}).at("lr").get<double>(), 1e-310);
  // Sizes that drive allocations: overflow and the ceiling are refused by key.
  EXPECT_NE(error_of([] { resolve_config(find_experiment("fourier"), "smoke", {"K=4611686018427387904"}); })
                .find("fourier: 10 training points per mode of K = 4611686018427387904 is more than 2^63 elements"),
            std::string::npos);
  EXPECT_NE(error_of([] { resolve_config(find_experiment("pinn"), "smoke", {"n_interior=1000000000"}); })
                .find("pinn: n_interior x width is 16000000000 elements, more than the ceiling of 2147483648"),
            std::string::npos);
  set_element_ceiling(int64_t{1} << 40);  // --max-elements raises it
  EXPECT_NO_THROW(resolve_config(find_experiment("pinn"), "smoke", {"n_interior=1000000000", "ntk_every=0"}));
  set_element_ceiling(kDefaultElementCeiling);
  EXPECT_EQ(error_of([] { resolve_config(find_experiment("vgg"), "smoke", {"width=12", "group=4"}); }),
            "vgg: width must be a multiple of 8, got 12");
  fs::remove_all(root);
}

TEST(Spec, ATableRefusesDefaultsItDoesNotAllow) {
  EXPECT_NE(error_of([] { KeyTable("toy", {integer("steps", 0, at_least(1), "steps")}); })
                .find("toy: the default of 'steps' is not allowed: steps must be >= 1, got 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { KeyTable("toy", {integer("steps", 1, "a"), number("steps", 1.0, "b")}); })
                .find("toy: the key table names 'steps' twice"),
            std::string::npos);
  const KeyTable table("toy", {integer("steps", 1, at_least(1), "steps"), choice("kind", "a", {"a", "b"}, "kind")});
  Config config = table.defaults();
  config["lr"] = 0.1;
  EXPECT_EQ(error_of([&] { table.validate(config); }), "toy: unknown key 'lr'; known keys: steps, kind");
  config = table.defaults();
  config["steps"] = 2.5;
  EXPECT_EQ(error_of([&] { table.validate(config); }), "toy: key 'steps' expects an integer, got 2.5");
  config.erase("kind");
  config["steps"] = 3;
  EXPECT_EQ(error_of([&] { table.validate(config); }), "toy: the configuration lacks key 'kind'");
}

struct ToyPart {
  double rate = 0;
};

struct Toy {
  int64_t steps = 0;
  std::string kind;
  bool flag = false;
  ToyPart part;
};

Schema<Toy> toy_schema(Schema<Toy>::Check check = {}) {
  return Schema<Toy>("toy",
                     {field(&Toy::steps, integer("steps", 3, at_least(1), "steps")),
                      field(&Toy::kind, choice("kind", "a", {"a", "b"}, "kind")),
                      field(&Toy::part, field(&ToyPart::rate, number("rate", 0.5, above(0), "rate"))),
                      field(&Toy::flag, boolean("flag", false, "flag"))},
                     std::move(check));
}

TEST(Schema, ReadsEveryKeyIntoItsMember) {
  const auto schema = toy_schema();
  Config config = schema.table().defaults();
  EXPECT_EQ(config.dump(), R"({"steps":3,"kind":"a","rate":0.5,"flag":false})");
  schema.table().apply(config, std::vector<std::string>{"steps=7", "kind=b", "rate=0.25", "flag=true"});
  const Toy toy = schema.read(config);
  EXPECT_EQ(toy.steps, 7);
  EXPECT_EQ(toy.kind, "b");
  EXPECT_EQ(toy.part.rate, 0.25);
  EXPECT_TRUE(toy.flag);
}

TEST(Schema, ReadingValidatesAndTheCheckSeesTheStruct) {
  const auto schema = toy_schema([](const Toy& t) {
    if (t.kind == "b" && t.steps > 5) throw ConfigError("kind b takes at most 5 steps");
  });
  Config config = schema.table().defaults();
  config["rate"] = -1.0;
  EXPECT_EQ(error_of([&] { schema.read(config); }), "toy: rate must be > 0, got -1");
  config = schema.table().defaults();
  schema.table().apply(config, std::vector<std::string>{"steps=6", "kind=b"});
  EXPECT_EQ(error_of([&] { schema.read(config); }), "toy: kind b takes at most 5 steps");
  EXPECT_EQ(error_of([&] { schema.table().validate(config); }), "toy: kind b takes at most 5 steps");
}

TEST(Schema, AKeyBoundToAMemberOfAnotherTypeIsRefused) {
  EXPECT_EQ(error_of([] { (void)field(&Toy::steps, number("steps", 1.0, "steps")); }),
            "key 'steps' is bound to a member of another type than its default's");
  EXPECT_EQ(error_of([] { (void)field(&Toy::kind, integer("kind", 1, "kind")); }),
            "key 'kind' is bound to a member of another type than its default's");
  EXPECT_EQ(error_of([] { (void)field(&ToyPart::rate, integer("rate", 1, "rate")); }),
            "key 'rate' is bound to a member of another type than its default's");
}

// Records list the configuration's keys in config.json's order: the table's.
TEST(Spec, KeysKeepTheOrderOfTheShippedRecords) {
  const fs::path results = fs::path(pln_test_source_dir) / "results";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(results)) {
    if (!fs::exists(entry.path() / "grid.json")) continue;
    SCOPED_TRACE(entry.path().filename().string());
    const auto grid = read_json_file(entry.path() / "grid.json");
    const auto& e = find_experiment(grid.at("experiment").get<std::string>());
    const auto axes = grid.at("axes").get<std::vector<std::string>>();
    std::vector<std::string> order;
    for (const auto& key : e.keys.keys()) order.push_back(key.name);
    std::vector<size_t> positions;
    for (const auto& column : read_csv(entry.path() / "records.csv").header) {
      const auto at = std::find(order.begin(), order.end(), column);
      if (at == order.end() || std::find(axes.begin(), axes.end(), column) != axes.end()) continue;
      positions.push_back(static_cast<size_t>(at - order.begin()));
    }
    EXPECT_GE(positions.size(), 10u);
    EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end()));
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace pln::exp
