#include "apps/scalar_log.h"

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/errors.h"

namespace rlswarm::apps {
namespace {

class JsonlScalarWriter final : public ScalarWriter {
 public:
  explicit JsonlScalarWriter(const std::string& path) : out_(path, std::ios::app) {
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
  void Flush() override { out_.flush(); }

 private:
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
  std::lock_guard lock(mu_);
  writers_.push_back(std::move(writer));
}

void ScalarLog::Write(Scalar scalar) {
  if (scalar.wall_time == 0) scalar.wall_time = NowSeconds();
  std::lock_guard lock(mu_);
  for (auto& w : writers_) w->Write(scalar);
}

void ScalarLog::Write(const std::string& tag, std::int64_t step, double value) {
  Write(Scalar{tag, step, 0, value});
}

void ScalarLog::Flush() {
  std::lock_guard lock(mu_);
  for (auto& w : writers_) w->Flush();
}

}  // namespace rlswarm::apps
