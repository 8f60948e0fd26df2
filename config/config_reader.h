#pragma once

// Typed experiment configs from YAML (configs/*.yaml) plus command-line
// overrides `section.key=value`.
//
// A config section is a plain struct with defaults and a Visit method that
// names its fields once; the same Visit drives reading (ConfigReader),
// printing (ConfigWriter, for --print-config) and validation:
//
//   struct EnvSection {
//     std::string name = "CartPole-v1";
//     std::int64_t num_envs = 16;
//     template <class V> void Visit(V& v) {
//       v.Field("name", name, "environment name");
//       v.Field("num_envs", num_envs, "envs per VectorEnv", Bounds{1, 65536});
//     }
//   };
//
// Every error names the key, the file and its line (or the override that set
// it): unknown keys, wrong types, out-of-range values, values not among the
// allowed choices.

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.h"

namespace rlswarm::config {

// A configuration mistake; the message starts with where it is.
class ConfigError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// A free-form map (an env's keyword arguments), kept as JSON text: "" when
// absent. Any YAML map is accepted; JSON being YAML, it prints back as YAML.
struct JsonObject {
  std::string text;
  bool operator==(const JsonObject&) const = default;
};

struct Bounds {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};

// The merged YAML tree of a config file and its overrides, and where each
// value came from.
class ConfigTree {
 public:
  // Parses `file` ("" for none: all defaults) and applies `overrides`
  // ("section.key=value", value in YAML syntax). A top-level `base: FILE`
  // (relative to the file that names it) loads FILE first, and this file's
  // keys are merged onto it section by section (a base may have a base).
  // Throws ConfigError for an unreadable file, a YAML syntax error (with its
  // line), a missing or cyclic base, or a malformed override.
  static ConfigTree Load(const std::string& file, const std::vector<std::string>& overrides);

  const YAML::Node& root() const { return root_; }
  // "configs/x.yaml:3:7" or "command-line override 'env.num_envs=8'".
  std::string Where(const std::string& path, const YAML::Node& node) const;

 private:
  std::string file_;
  YAML::Node root_;
  std::map<std::string, std::string> key_origin_;       // key path -> file it came from
  std::map<std::string, std::string> override_origin_;  // key path -> "k=v"
};

class ConfigReader {
 public:
  explicit ConfigReader(const ConfigTree& tree) : tree_(tree), node_(tree.root()) {}

  // Reads the section `name` into `section` (absent: keeps its defaults).
  template <class T>
  void Section(std::string_view name, T& section);

  template <class T>
  void Field(std::string_view key, T& value, const char* /*doc*/, Bounds bounds = {}) {
    YAML::Node child = Child(key);
    if (child) Read(child, key, value, bounds);
  }

  // A string that must be one of `choices`.
  void Choice(std::string_view key, std::string& value, const char* doc,
              const std::vector<std::string>& choices);

  // Throws ConfigError for the keys of the root map that no Section read.
  void FinishRoot();

 private:
  YAML::Node Child(std::string_view key);
  std::string Path(std::string_view key) const;
  [[noreturn]] void Fail(std::string_view key, const YAML::Node& node,
                         const std::string& what) const;
  void CheckUnknownKeys(const YAML::Node& map, const std::string& path) const;
  std::string Scalar(const YAML::Node& node, std::string_view key, const char* expected) const;

  void Read(const YAML::Node& node, std::string_view key, bool& value, Bounds bounds);
  void Read(const YAML::Node& node, std::string_view key, std::string& value, Bounds bounds);
  void Read(const YAML::Node& node, std::string_view key, double& value, Bounds bounds);
  void Read(const YAML::Node& node, std::string_view key, std::int64_t& value, Bounds bounds);
  void Read(const YAML::Node& node, std::string_view key, std::uint64_t& value, Bounds bounds);
  void Read(const YAML::Node& node, std::string_view key, int& value, Bounds bounds);
  // A list of integers, each within `bounds`.
  void Read(const YAML::Node& node, std::string_view key, std::vector<std::int64_t>& value,
            Bounds bounds);
  // A list of strings ("[a, b]" or a YAML block list).
  void Read(const YAML::Node& node, std::string_view key, std::vector<std::string>& value,
            Bounds bounds);
  // A YAML map of anything, converted to JSON.
  void Read(const YAML::Node& node, std::string_view key, JsonObject& value, Bounds bounds);
  template <class T>
  void Read(const YAML::Node& node, std::string_view key, std::optional<T>& value, Bounds bounds) {
    if (node.IsNull()) {
      value.reset();
      return;
    }
    T v{};
    Read(node, key, v, bounds);
    value = v;
  }

  const ConfigTree& tree_;
  YAML::Node node_;                // the map being read
  std::string section_;            // its path ("" at the root)
  std::vector<std::string> seen_;  // keys read in node_
  std::vector<std::string> root_seen_;
};

// Emits a config as YAML, with each field's doc as a comment.
class ConfigWriter {
 public:
  template <class T>
  void Section(std::string_view name, T& section) {
    out_ << YAML::Key << std::string(name) << YAML::Value << YAML::BeginMap;
    section.Visit(*this);
    out_ << YAML::EndMap;
  }
  template <class T>
  void Field(std::string_view key, const T& value, const char* doc, Bounds = {}) {
    out_ << YAML::Key << std::string(key) << YAML::Value;
    Emit(value);
    out_ << YAML::Comment(doc);
  }
  void Choice(std::string_view key, const std::string& value, const char* doc,
              const std::vector<std::string>&) {
    Field(key, value, doc);
  }

  // Wraps a whole config: writer.Document([&](ConfigWriter& w){ w.Section(...); }).
  template <class F>
  std::string Document(F&& sections) {
    out_ << YAML::BeginMap;
    sections(*this);
    out_ << YAML::EndMap;
    return std::string(out_.c_str()) + "\n";
  }

 private:
  template <class T>
  void Emit(const std::optional<T>& v) {
    if (v) {
      Emit(*v);
    } else {
      out_ << YAML::Null;
    }
  }
  void Emit(const JsonObject& v) {
    if (v.text.empty()) {
      out_ << YAML::Null;
    } else {
      // The node's own style, not the YAML::Flow manipulator: a node does not
      // use up a pending manipulator, which would then turn the next section
      // into flow style.
      YAML::Node node = YAML::Load(v.text);
      node.SetStyle(YAML::EmitterStyle::Flow);
      out_ << node;
    }
  }
  template <class T>
  void Emit(const std::vector<T>& v) {
    out_ << YAML::Flow << v;
  }
  template <class T>
  void Emit(const T& v) {
    out_ << v;
  }

  YAML::Emitter out_;
};

template <class T>
void ConfigReader::Section(std::string_view name, T& section) {
  root_seen_.emplace_back(name);
  YAML::Node child = tree_.root()[std::string(name)];
  if (!child || child.IsNull()) return;
  if (!child.IsMap()) Fail(name, child, "must be a map of keys");
  YAML::Node saved_node = node_;
  std::string saved_section = std::move(section_);
  std::vector<std::string> saved_seen = std::move(seen_);
  node_.reset(child);
  section_ = std::string(name);
  seen_.clear();
  section.Visit(*this);
  CheckUnknownKeys(node_, section_);
  node_.reset(saved_node);
  section_ = std::move(saved_section);
  seen_ = std::move(saved_seen);
}

}  // namespace rlswarm::config
