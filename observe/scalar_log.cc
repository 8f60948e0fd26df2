#include "observe/scalar_log.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/errors.h"

namespace rlswarm::observe {
namespace {

class JsonlScalarWriter final : public ScalarWriter {
 public:
  explicit JsonlScalarWriter(const std::string& path) : path_(path), out_(path, std::ios::app) {
    if (!out_) throw Unavailable("cannot open " + path + " for appending");
  }
  void Write(const Scalar& s) override {
    out_ << nlohmann::json{{"tag", s.tag},
                           {"step", s.step},
                           {"wall_time", s.wall_time},
                           {"value", s.value}}
                .dump()
         << '\n';
  }
  void Flush() override {
    out_.flush();
    if (!out_) throw Unavailable("cannot write " + path_ + " (disk full?)");
  }

 private:
  std::string path_;
  std::ofstream out_;
};

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::unique_ptr<ScalarWriter> OpenJsonlScalarWriter(const std::string& path) {
  return std::make_unique<JsonlScalarWriter>(path);
}

std::vector<Scalar> ReadJsonlScalars(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound("no scalars file " + path);
  std::vector<Scalar> scalars;
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("tag") || !j.contains("value") || !j["tag"].is_string() ||
        !j["value"].is_number()) {
      continue;
    }
    Scalar s;
    s.tag = j["tag"].get<std::string>();
    s.value = j["value"].get<double>();
    if (j.contains("step") && j["step"].is_number()) s.step = j["step"].get<std::int64_t>();
    if (j.contains("wall_time") && j["wall_time"].is_number()) {
      s.wall_time = j["wall_time"].get<double>();
    }
    scalars.push_back(std::move(s));
  }
  return scalars;
}

void ScalarLog::Add(std::unique_ptr<ScalarWriter> writer) {
  MutexLock lock(mu_);
  writers_.push_back(Entry{std::move(writer)});
}

template <typename Op>
void ScalarLog::ForEachWorking(Op op) {
  for (Entry& e : writers_) {
    if (e.failed) continue;
    try {
      op(*e.writer);
    } catch (const std::exception& error) {
      e.failed = true;
      failures_.push_back(error.what());
      spdlog::error("scalars: {}; this writer's later scalars are lost", error.what());
    }
  }
}

void ScalarLog::Write(Scalar scalar) {
  if (scalar.wall_time == 0) scalar.wall_time = NowSeconds();
  MutexLock lock(mu_);
  ForEachWorking([&](ScalarWriter& w) { w.Write(scalar); });
}

void ScalarLog::Write(const std::string& tag, std::int64_t step, double value) {
  Write(Scalar{tag, step, 0, value});
}

void ScalarLog::Flush() {
  MutexLock lock(mu_);
  ForEachWorking([](ScalarWriter& w) { w.Flush(); });
}

std::vector<std::string> ScalarLog::failures() const {
  MutexLock lock(mu_);
  return failures_;
}

}  // namespace rlswarm::observe
