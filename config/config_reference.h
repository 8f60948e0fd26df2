#pragma once

// The configuration reference (docs/configuration.md), generated from the
// same Visit methods that read configs, so the page cannot say something the
// reader does not do. KeyDocCollector is the visitor: it records every key's
// type, default, bounds, choices and doc; ConfigReferenceMarkdown renders the
// page. Not thread-safe (a collector is used by one thread).
//
// A key that applies only under a choice starts its doc with that choice's
// value and a colon ("td3: the policy's learning rate" applies when
// learner.algorithm is td3; "processes mode: ..." when launch.mode is
// processes); one that applies only to a family of envs starts with the
// family's one-word name ("MinAtar: ...", "gymnasium: ..."). The page groups
// such keys under their condition.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_reader.h"

namespace rlswarm::config {

// One key as its section's Visit describes it.
struct KeyDoc {
  std::string section;               // "learner"
  std::string key;                   // "batch_size"
  std::string type;                  // "integer", "number or null", "list of strings", ...
  std::string default_value;         // as YAML: 128, null, [64, 64], ""
  std::string doc;                   // the doc string, as written
  Bounds bounds;                     // infinite where unbounded
  std::vector<std::string> choices;  // a Choice's allowed values; empty for a Field
};

// The visitor: a config's Visit(collector) records every key, in order.
class KeyDocCollector {
 public:
  template <class T>
  void Section(std::string_view name, T& section) {
    const std::string saved = section_;
    section_ = section_.empty() ? std::string(name) : section_ + "." + std::string(name);
    sections_.push_back(section_);
    section.Visit(*this);
    section_ = saved;
  }
  template <class T>
  void Field(std::string_view key, const T& value, const char* doc, Bounds bounds = {}) {
    Add(key, TypeName(value), DefaultText(value), doc, bounds, {});
  }
  void Choice(std::string_view key, const std::string& value, const char* doc,
              const std::vector<std::string>& choices) {
    Add(key, "string", DefaultText(value), doc, {}, choices);
  }

  // Every section's dotted name, in visiting order.
  const std::vector<std::string>& sections() const { return sections_; }
  const std::vector<KeyDoc>& keys() const { return keys_; }

 private:
  void Add(std::string_view key, std::string type, std::string default_value, const char* doc,
           Bounds bounds, std::vector<std::string> choices);

  static std::string TypeName(bool) { return "bool"; }
  static std::string TypeName(const std::string&) { return "string"; }
  static std::string TypeName(double) { return "number"; }
  static std::string TypeName(int) { return "integer"; }
  static std::string TypeName(std::int64_t) { return "integer"; }
  static std::string TypeName(std::uint64_t) { return "non-negative integer"; }
  static std::string TypeName(const std::vector<std::int64_t>&) { return "list of integers"; }
  static std::string TypeName(const std::vector<std::string>&) { return "list of strings"; }
  static std::string TypeName(const JsonObject&) { return "map"; }
  template <class T>
  static std::string TypeName(const std::optional<T>& v) {
    return TypeName(v.value_or(T{})) + " or null";
  }

  static std::string DefaultText(bool v);
  static std::string DefaultText(const std::string& v);
  static std::string DefaultText(double v);
  static std::string DefaultText(std::int64_t v);
  static std::string DefaultText(int v) { return DefaultText(std::int64_t{v}); }
  static std::string DefaultText(std::uint64_t v);
  static std::string DefaultText(const std::vector<std::int64_t>& v);
  static std::string DefaultText(const std::vector<std::string>& v);
  static std::string DefaultText(const JsonObject& v);
  template <class T>
  static std::string DefaultText(const std::optional<T>& v) {
    return v ? DefaultText(*v) : "null";
  }

  std::string section_;  // dotted path of the section being visited
  std::vector<std::string> sections_;
  std::vector<KeyDoc> keys_;
};

// The whole reference page (Markdown) for the default ExperimentConfig: an
// introduction, then every section's keys, those that apply only under a
// choice grouped under it. Throws Internal for a section that has no summary
// line in config_reference.cc (a new section needs one).
std::string ConfigReferenceMarkdown();

// Formats a number as the page shows bounds and defaults: the shortest text
// that reads back the same, round powers of ten from 1e6 up as 1e6, 1e12.
std::string FormatConfigNumber(double v);

}  // namespace rlswarm::config
