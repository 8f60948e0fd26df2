#include "replay/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"

namespace rlswarm::replay {

RateLimiterOptions RateLimiterOptions::MinSize(std::int64_t min_size) {
  RateLimiterOptions options;
  options.min_size_to_sample = min_size;
  return options;
}

RateLimiterOptions RateLimiterOptions::SampleToInsertRatio(double samples_per_insert,
                                                           std::int64_t min_size_to_sample,
                                                           double error_buffer) {
  RateLimiterOptions options;
  options.samples_per_insert = samples_per_insert;
  options.min_size_to_sample = min_size_to_sample;
  const double offset = samples_per_insert * static_cast<double>(min_size_to_sample);
  options.min_diff = offset - error_buffer;
  options.max_diff = offset + error_buffer;
  return options;
}

void RateLimiterOptions::Validate() const {
  if (!std::isfinite(samples_per_insert) || samples_per_insert <= 0) {
    throw InvalidArgument("rate limiter: samples_per_insert must be finite and > 0, got " +
                          std::to_string(samples_per_insert));
  }
  if (min_size_to_sample < 1) {
    throw InvalidArgument("rate limiter: min_size_to_sample must be >= 1, got " +
                          std::to_string(min_size_to_sample));
  }
  if (std::isnan(min_diff) || std::isnan(max_diff) || min_diff > max_diff) {
    throw InvalidArgument("rate limiter: need min_diff <= max_diff, got [" +
                          std::to_string(min_diff) + ", " + std::to_string(max_diff) + "]");
  }
  const double needed = 2 * std::max(1.0, samples_per_insert);
  if (max_diff - min_diff < needed) {
    throw InvalidArgument(
        "rate limiter: the window max_diff - min_diff = " + std::to_string(max_diff - min_diff) +
        " must be >= 2 * max(1, " + "samples_per_insert) = " + std::to_string(needed) +
        " (error_buffer >= max(1, samples_per_insert)), or inserts and " +
        "samples can block each other for good");
  }
  const double offset = samples_per_insert * static_cast<double>(min_size_to_sample);
  if (min_diff > offset) {
    throw InvalidArgument(
        "rate limiter: min_diff = " + std::to_string(min_diff) +
        " is above samples_per_insert * min_size_to_sample = " + std::to_string(offset));
  }
}

double RateLimiter::Cursor() const {
  const double inserts = static_cast<double>(counts_.inserts + remote_inserts_);
  return inserts * options_.samples_per_insert -
         static_cast<double>(counts_.samples + remote_samples_);
}

bool RateLimiter::CanInsert() const {
  if (size() + 1 <= options_.min_size_to_sample) return true;
  return Cursor() + options_.samples_per_insert <= options_.max_diff;
}

bool RateLimiter::CanSample() const {
  if (size() < options_.min_size_to_sample) return false;
  return Cursor() - 1 >= options_.min_diff;
}

}  // namespace rlswarm::replay
