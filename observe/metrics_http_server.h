#pragma once

// A run's live numbers for Prometheus: an HTTP server (Boost.Beast) that
// answers `GET /metrics` with the text a callback renders, in the Prometheus
// text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), and
// PrometheusText, the builder that formats that text.
//
// The server runs on its own thread; connections are served asynchronously on
// that thread, so a slow client never holds up another. Each read or write
// must finish within 5 s or the connection is closed; requests are limited to
// 8 KiB of header and 4 KiB of body; anything that is not HTTP closes the
// connection (logged at debug). Other paths get 404, other methods 405.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlswarm::observe {

// Formats metric families in the Prometheus text format: per family one
// `# HELP` and one `# TYPE` line, then its samples, families in the order
// they were first added. Not thread-safe; build one per scrape.
class PrometheusText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // Adds a sample of a gauge / counter. Adding the same name again (e.g. with
  // other labels) adds a sample to that family. Throws InvalidArgument when
  // the name does not match [a-zA-Z_:][a-zA-Z0-9_:]*, a label name does not
  // match [a-zA-Z_][a-zA-Z0-9_]*, the name was added before with the other
  // type, or a counter is negative. Label values and help are escaped.
  PrometheusText& Gauge(std::string_view name, std::string_view help, double value,
                        const Labels& labels = {});
  PrometheusText& Counter(std::string_view name, std::string_view help, double value,
                          const Labels& labels = {});

  // The exposition text, ending in a newline (empty if nothing was added).
  std::string Text() const;

 private:
  struct Family {
    std::string name;
    std::string help;
    std::string type;  // "gauge" or "counter"
    std::vector<std::string> samples;
  };
  PrometheusText& Add(std::string_view type, std::string_view name, std::string_view help,
                      double value, const Labels& labels);

  std::vector<Family> families_;
};

// Serves GET /metrics until Stop() or destruction.
//
// Thread-safety: construction, port(), Stop() and the destructor are called
// from the owning thread. `render` is called on the server's thread, one call
// at a time, for every scrape: it must be thread-safe with respect to the
// rest of the program, and should be quick (it holds up other connections).
// If it throws, that scrape gets 500 and the server keeps running.
class MetricsHttpServer {
 public:
  // Binds `bind_address` ("127.0.0.1", "0.0.0.0", "::1") and `port` (0 picks
  // a free one; read it back with port()) and starts serving. Throws
  // InvalidArgument for a malformed address or a port outside [0, 65535],
  // Unavailable when the address cannot be bound (e.g. the port is in use).
  MetricsHttpServer(std::string bind_address, int port, std::function<std::string()> render);
  // Stops and joins the server thread.
  ~MetricsHttpServer();

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The bound port.
  int port() const;

  // Closes the listening socket and every open connection, then joins the
  // server thread; waits at most for a render() call in progress. Idempotent.
  void Stop();

 private:
  // Asio and Beast stay out of this header (pimpl).
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlswarm::observe
