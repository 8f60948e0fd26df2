#include "config/config_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace rlswarm::config {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// A plain YAML scalar as JSON: null, a bool, an integer, a number, else a
// string; a quoted scalar is always a string.
nlohmann::json ScalarToJson(const YAML::Node& node) {
  const std::string s = node.Scalar();
  if (node.Tag() == "!") return s;
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  std::int64_t i = 0;
  auto [iend, iec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (iec == std::errc() && iend == s.data() + s.size()) return i;
  double d = 0;
  auto [dend, dec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (dec == std::errc() && dend == s.data() + s.size() && std::isfinite(d)) return d;
  return s;
}

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.Scalar()] = YamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(YamlToJson(item));
      return out;
    }
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    default:
      return nullptr;
  }
}

std::string FormatNumber(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Parses one YAML file whose top level must be a map (an empty file is an
// empty map).
YAML::Node ParseFile(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file + ": cannot open config file");
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw ConfigError(file + ":" + std::to_string(e.mark.line + 1) + ":" +
                      std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
  }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError(file + ": the top level must be a map of sections");
  return root;
}

// Records `file` as the origin of every key path in `node` below `prefix`.
void NoteOrigins(const YAML::Node& node, const std::string& prefix, const std::string& file,
                 std::map<std::string, std::string>& origins) {
  if (!node.IsMap()) return;
  for (const auto& kv : node) {
    const std::string path = (prefix.empty() ? "" : prefix + ".") + kv.first.as<std::string>();
    origins[path] = file;
    NoteOrigins(kv.second, path, file, origins);
  }
}

// Puts `top`'s keys onto `base`: maps merge key by key, anything else
// (scalars, lists, null) replaces the base's value.
void MergeOnto(YAML::Node base, const YAML::Node& top) {
  for (const auto& kv : top) {
    const std::string key = kv.first.as<std::string>();
    YAML::Node existing = base[key];
    if (existing && existing.IsMap() && kv.second.IsMap()) {
      MergeOnto(existing, kv.second);
    } else {
      base[key] = kv.second;
    }
  }
}

// `file` with its chain of `base:` files merged under it; `chain` holds the
// files that include this one (a cycle is an error).
YAML::Node LoadWithBases(const std::string& file, std::vector<std::string>& chain,
                         std::map<std::string, std::string>& origins) {
  YAML::Node root = ParseFile(file);
  const YAML::Node base_key = root["base"];
  if (!base_key) {
    NoteOrigins(root, "", file, origins);
    return root;
  }
  const auto where = [&] {
    const YAML::Mark m = base_key.Mark();
    return fmt::format("{}:{}:{}", file, m.line + 1, m.column + 1);
  };
  if (!base_key.IsScalar() || base_key.as<std::string>().empty()) {
    throw ConfigError(where() + ": key 'base' must be the path of another config file");
  }
  // Relative to the including file, as a user reads it.
  std::filesystem::path base_path = base_key.as<std::string>();
  if (base_path.is_relative()) base_path = std::filesystem::path(file).parent_path() / base_path;
  const std::string base_file = base_path.lexically_normal().string();
  std::error_code ec;
  const std::string id = std::filesystem::weakly_canonical(base_path, ec).string();
  chain.push_back(std::filesystem::weakly_canonical(file, ec).string());
  if (std::find(chain.begin(), chain.end(), id) != chain.end()) {
    throw ConfigError(where() + ": key 'base': '" + base_file +
                      "' includes this file again (a cycle of base configs)");
  }
  if (!std::filesystem::exists(base_path)) {
    throw ConfigError(where() + ": key 'base': cannot open config file '" + base_file + "'");
  }
  YAML::Node merged = LoadWithBases(base_file, chain, origins);
  chain.pop_back();
  root.remove("base");
  MergeOnto(merged, root);
  NoteOrigins(root, "", file, origins);
  return merged;
}

}  // namespace

ConfigTree ConfigTree::Load(const std::string& file, const std::vector<std::string>& overrides) {
  ConfigTree tree;
  tree.file_ = file;
  if (file.empty()) {
    tree.root_ = YAML::Node(YAML::NodeType::Map);
  } else {
    std::vector<std::string> chain;
    tree.root_ = LoadWithBases(file, chain, tree.key_origin_);
  }
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("command-line override '" + o + "': expected section.key=value");
    }
    const std::string path = o.substr(0, eq);
    std::vector<std::string> parts;
    std::stringstream ss(path);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    if (parts.size() < 2 ||
        std::any_of(parts.begin(), parts.end(), [](auto& p) { return p.empty(); })) {
      throw ConfigError("command-line override '" + o + "': expected section.key=value");
    }
    YAML::Node value;
    try {
      value = YAML::Load(o.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw ConfigError("command-line override '" + o + "': " + e.msg);
    }
    YAML::Node cur = tree.root_;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = cur[parts[i]];
      if (next && !next.IsMap() && !next.IsNull()) {
        throw ConfigError("command-line override '" + o + "': '" + parts[i] + "' is not a section");
      }
      if (!next || next.IsNull()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      cur.reset(cur[parts[i]]);
    }
    cur[parts.back()] = value;
    tree.override_origin_[path] = o;
  }
  return tree;
}

std::string ConfigTree::Where(const std::string& path, const YAML::Node& node) const {
  if (auto it = override_origin_.find(path); it != override_origin_.end()) {
    return "command-line override '" + it->second + "'";
  }
  // An override below this key made it a map ("env.num_envs.x=1").
  for (const auto& [override_path, origin] : override_origin_) {
    const bool below = override_path.size() > path.size() && override_path.starts_with(path) &&
                       override_path[path.size()] == '.';
    if (below) return "command-line override '" + origin + "'";
  }
  const YAML::Mark mark = node.Mark();
  // A key inherited from a base config is that file's (its marks are too).
  const auto origin = key_origin_.find(path);
  std::string where = origin != key_origin_.end() ? origin->second
                      : file_.empty()             ? "<defaults>"
                                                  : file_;
  if (!mark.is_null()) where += fmt::format(":{}:{}", mark.line + 1, mark.column + 1);
  return where;
}

std::string ConfigReader::Path(std::string_view key) const {
  return section_.empty() ? std::string(key) : section_ + "." + std::string(key);
}

void ConfigReader::Fail(std::string_view key, const YAML::Node& node,
                        const std::string& what) const {
  throw ConfigError(tree_.Where(Path(key), node) + ": key '" + Path(key) + "' " + what);
}

YAML::Node ConfigReader::Child(std::string_view key) {
  seen_.emplace_back(key);
  const YAML::Node& map = node_;  // const: looking a key up must not insert it
  return map[std::string(key)];
}

void ConfigReader::CheckUnknownKeys(const YAML::Node& map, const std::string& path) const {
  const auto& known = path.empty() ? root_seen_ : seen_;
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string full = path.empty() ? key : path + "." + key;
      throw ConfigError(tree_.Where(full, kv.first) + ": unknown key '" + full + "' (known " +
                        (path.empty() ? "sections" : "keys of '" + path + "'") + ": " +
                        Join(known) + ")");
    }
  }
}

void ConfigReader::FinishRoot() { CheckUnknownKeys(tree_.root(), ""); }

std::string ConfigReader::Scalar(const YAML::Node& node, std::string_view key,
                                 const char* expected) const {
  if (!node.IsScalar())
    Fail(key, node,
         std::string("must be ") + expected + ", got a " +
             (node.IsMap()        ? "map"
              : node.IsSequence() ? "list"
                                  : "null"));
  return node.Scalar();
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key, bool& value, Bounds) {
  const std::string s = Scalar(node, key, "true or false");
  if (s == "true" || s == "True" || s == "yes" || s == "on") {
    value = true;
  } else if (s == "false" || s == "False" || s == "no" || s == "off") {
    value = false;
  } else {
    Fail(key, node, "must be true or false, got '" + s + "'");
  }
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key, std::string& value, Bounds) {
  value = Scalar(node, key, "a string");
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key, JsonObject& value, Bounds) {
  if (node.IsNull()) {
    value.text.clear();
    return;
  }
  if (!node.IsMap()) Fail(key, node, "must be a map of keyword arguments");
  value.text = YamlToJson(node).dump();
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key, double& value,
                        Bounds bounds) {
  const std::string s = Scalar(node, key, "a number");
  double v = 0.0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    Fail(key, node, "must be a finite number, got '" + s + "'");
  }
  if (v < bounds.min || v > bounds.max) {
    Fail(key, node,
         "must be in [" + FormatNumber(bounds.min) + ", " + FormatNumber(bounds.max) + "], got " +
             s);
  }
  value = v;
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key, std::int64_t& value,
                        Bounds bounds) {
  const std::string s = Scalar(node, key, "an integer");
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    Fail(key, node, "must be an integer, got '" + s + "'");
  }
  if (static_cast<double>(v) < bounds.min || static_cast<double>(v) > bounds.max) {
    Fail(key, node,
         "must be in [" + FormatNumber(bounds.min) + ", " + FormatNumber(bounds.max) + "], got " +
             s);
  }
  value = v;
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key,
                        std::vector<std::int64_t>& value, Bounds bounds) {
  if (!node.IsSequence()) Fail(key, node, "must be a list of integers");
  value.clear();
  for (const YAML::Node& element : node) {
    std::int64_t v = 0;
    Read(element, key, v, bounds);
    value.push_back(v);
  }
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key,
                        std::vector<std::string>& value, Bounds) {
  if (!node.IsSequence()) Fail(key, node, "must be a list of strings");
  value.clear();
  for (const YAML::Node& element : node) value.push_back(Scalar(element, key, "a string"));
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key, int& value, Bounds bounds) {
  std::int64_t v = 0;
  bounds.min = std::max<double>(bounds.min, std::numeric_limits<int>::min());
  bounds.max = std::min<double>(bounds.max, std::numeric_limits<int>::max());
  Read(node, key, v, bounds);
  value = static_cast<int>(v);
}

void ConfigReader::Read(const YAML::Node& node, std::string_view key, std::uint64_t& value,
                        Bounds bounds) {
  const std::string s = Scalar(node, key, "a non-negative integer");
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.starts_with('-') || ec != std::errc() || end != s.data() + s.size()) {
    Fail(key, node, "must be a non-negative integer, got '" + s + "'");
  }
  if (static_cast<double>(v) < bounds.min || static_cast<double>(v) > bounds.max) {
    Fail(key, node,
         "must be in [" + FormatNumber(bounds.min) + ", " + FormatNumber(bounds.max) + "], got " +
             s);
  }
  value = v;
}

void ConfigReader::Choice(std::string_view key, std::string& value, const char*,
                          const std::vector<std::string>& choices) {
  YAML::Node child = Child(key);
  if (!child) return;
  std::string v;
  Read(child, key, v, {});
  if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
    Fail(key, child, "must be one of: " + Join(choices) + "; got '" + v + "'");
  }
  value = v;
}

}  // namespace rlswarm::config
