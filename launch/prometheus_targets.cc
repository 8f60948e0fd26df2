#include "launch/prometheus_targets.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "launch/process_control.h"

namespace rlswarm::launch {

std::optional<std::string> ScrapeAddress(const std::string& url) {
  const std::string scheme = "http://";
  const std::string path = "/metrics";
  if (url.size() <= scheme.size() + path.size() || url.rfind(scheme, 0) != 0 ||
      url.compare(url.size() - path.size(), path.size(), path) != 0) {
    return std::nullopt;
  }
  std::string address = url.substr(scheme.size(), url.size() - scheme.size() - path.size());
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size() ||
      address.find('/') != std::string::npos) {
    return std::nullopt;
  }
  for (std::size_t i = colon + 1; i < address.size(); ++i) {
    if (address[i] < '0' || address[i] > '9') return std::nullopt;
  }
  return address;
}

std::string FileSdJson(const std::vector<std::pair<std::string, TargetLabels>>& groups) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [address, labels] : groups) {
    nlohmann::json label_map = nlohmann::json::object();
    for (const auto& [name, value] : labels) label_map[name] = value;
    list.push_back({{"targets", {address}}, {"labels", label_map}});
  }
  return list.dump(2);
}

PrometheusTargets::PrometheusTargets(std::filesystem::path sd_file,
                                     std::vector<MetricsTarget> targets,
                                     std::chrono::milliseconds poll)
    : sd_file_(std::move(sd_file)), targets_(std::move(targets)), poll_(poll) {}

PrometheusTargets::~PrometheusTargets() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

bool PrometheusTargets::Refresh() {
  std::vector<std::pair<std::string, TargetLabels>> groups;
  for (const MetricsTarget& target : targets_) {
    std::ifstream in(target.url_file);
    std::string url;
    if (!std::getline(in, url)) continue;  // not serving yet
    if (std::optional<std::string> address = ScrapeAddress(url)) {
      groups.emplace_back(*address, target.labels);
    }
  }
  const std::string json = FileSdJson(groups);
  MutexLock lock(mu_);
  if (written_ == json) return false;
  WriteLinesAtomically(sd_file_.string(), {json});
  written_ = json;
  return true;
}

void PrometheusTargets::Start() {
  Refresh();
  thread_ = std::thread([this] {
    MutexLock lock(mu_);
    while (!cv_.WaitFor(lock, poll_, [this]() RLSWARM_REQUIRES(mu_) { return stop_; })) {
      lock.Unlock();
      try {
        Refresh();
      } catch (const Error& e) {
        spdlog::warn("cannot update {}: {}", sd_file_.string(), e.what());
      }
      lock.Lock();
    }
  });
}

}  // namespace rlswarm::launch
