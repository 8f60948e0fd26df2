#include "observe/metrics_http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <exception>
#include <optional>
#include <thread>

#include "common/errors.h"

namespace rlswarm::observe {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kIoTimeout = std::chrono::seconds(5);
constexpr std::uint32_t kHeaderLimit = 8 * 1024;
constexpr std::uint64_t kBodyLimit = 4 * 1024;
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);
constexpr std::string_view kMetricsPath = "/metrics";
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

bool IsMetricNameChar(char c, bool first) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  return letter || (!first && c >= '0' && c <= '9');
}

bool IsLabelNameChar(char c, bool first) { return c != ':' && IsMetricNameChar(c, first); }

bool IsValidName(std::string_view name, bool (*valid_char)(char, bool)) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!valid_char(name[i], i == 0)) return false;
  }
  return true;
}

// The exposition format's escapes: HELP escapes backslash and newline, label
// values also the double quote.
std::string Escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// Go's ParseFloat spellings for the specials, whole numbers (counts) as
// integers, else the shortest round trip.
std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::trunc(value) && std::abs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

}  // namespace

PrometheusText& PrometheusText::Gauge(std::string_view name, std::string_view help, double value,
                                      const Labels& labels) {
  return Add("gauge", name, help, value, labels);
}

PrometheusText& PrometheusText::Counter(std::string_view name, std::string_view help, double value,
                                        const Labels& labels) {
  if (value < 0) {
    throw InvalidArgument("counter " + std::string(name) + " is negative: " + FormatValue(value));
  }
  return Add("counter", name, help, value, labels);
}

PrometheusText& PrometheusText::Add(std::string_view type, std::string_view name,
                                    std::string_view help, double value, const Labels& labels) {
  if (!IsValidName(name, IsMetricNameChar)) {
    throw InvalidArgument("invalid Prometheus metric name '" + std::string(name) +
                          "' (want [a-zA-Z_:][a-zA-Z0-9_:]*)");
  }
  std::string sample(name);
  if (!labels.empty()) {
    sample += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const auto& [label, label_value] = labels[i];
      if (!IsValidName(label, IsLabelNameChar) || label.starts_with("__")) {
        throw InvalidArgument("invalid Prometheus label name '" + label + "' on " +
                              std::string(name) + " (want [a-zA-Z_][a-zA-Z0-9_]*, no '__' prefix)");
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (labels[j].first == label) {
          throw InvalidArgument("label '" + label + "' given twice on " + std::string(name));
        }
      }
      if (i > 0) sample += ',';
      sample += label + "=\"" + Escape(label_value, /*quote=*/true) + '"';
    }
    sample += '}';
  }
  sample += ' ' + FormatValue(value);

  auto family = std::find_if(families_.begin(), families_.end(),
                             [&](const Family& f) { return f.name == name; });
  if (family == families_.end()) {
    families_.push_back(Family{std::string(name), std::string(help), std::string(type), {}});
    family = families_.end() - 1;
  } else if (family->type != type) {
    throw InvalidArgument("metric " + std::string(name) + " is a " + family->type + ", not a " +
                          std::string(type));
  }
  family->samples.push_back(std::move(sample));
  return *this;
}

std::string PrometheusText::Text() const {
  std::string text;
  for (const Family& family : families_) {
    text += "# HELP " + family.name + ' ' + Escape(family.help, /*quote=*/false) + '\n';
    text += "# TYPE " + family.name + ' ' + family.type + '\n';
    for (const std::string& sample : family.samples) text += sample + '\n';
  }
  return text;
}

namespace {

// One connection: read a request, write the response, repeat while the client
// keeps the connection alive. Lives as long as an operation of it is pending
// (the handlers hold a shared_ptr); runs on the server thread only.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const std::function<std::string()>* render)
      : stream_(std::move(socket)), render_(render) {}

  void Start() { Read(); }

  // Aborts the pending operation; its handler then drops the session.
  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIoTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream) return Close();
    if (ec) {
      // Timeouts, garbage, oversized requests: close without an answer.
      if (ec != asio::error::operation_aborted) {
        spdlog::debug("metrics server: closing connection: {}", ec.message());
      }
      return Close();
    }
    response_ = Respond(parser_->get());
    stream_.expires_after(kIoTimeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code write_ec, std::size_t) {
                        self->OnWrite(write_ec);
                      });
  }

  void OnWrite(beast::error_code ec) {
    if (ec) {
      if (ec != asio::error::operation_aborted) {
        spdlog::debug("metrics server: writing the response failed: {}", ec.message());
      }
      return Close();
    }
    if (!response_.keep_alive()) return Close();
    Read();
  }

  Response Respond(const Request& request) const {
    Response response;
    response.version(request.version());
    response.keep_alive(request.keep_alive());
    std::string_view target(request.target().data(), request.target().size());
    target = target.substr(0, target.find('?'));
    if (target != kMetricsPath) {
      response.result(http::status::not_found);
      response.set(http::field::content_type, "text/plain");
      response.body() = "not found; metrics are at /metrics\n";
    } else if (request.method() != http::verb::get) {
      response.result(http::status::method_not_allowed);
      response.set(http::field::allow, "GET");
      response.set(http::field::content_type, "text/plain");
      response.body() = "method not allowed\n";
    } else {
      try {
        response.body() = (*render_)();
        response.result(http::status::ok);
        response.set(http::field::content_type, kContentType);
      } catch (const std::exception& e) {
        spdlog::warn("metrics server: rendering /metrics failed: {}", e.what());
        response.result(http::status::internal_server_error);
        response.set(http::field::content_type, "text/plain");
        response.body() = std::string("rendering metrics failed: ") + e.what() + "\n";
      }
    }
    response.prepare_payload();
    return response;
  }

  beast::tcp_stream stream_;
  const std::function<std::string()>* render_;  // owned by the server, outlives sessions
  beast::flat_buffer buffer_{kHeaderLimit + kBodyLimit};
  std::optional<http::request_parser<http::string_body>> parser_;  // fresh per request
  Response response_;  // kept alive until its write completes
};

}  // namespace

struct MetricsHttpServer::Impl {
  explicit Impl(std::function<std::string()> render_fn)
      : render(std::move(render_fn)), acceptor(io_context), retry_timer(io_context) {}

  // Server thread only: accepts the next connection, forever until the
  // acceptor is closed.
  void Accept() {
    if (!acceptor.is_open()) return;
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {
        // E.g. out of file descriptors: back off instead of spinning.
        spdlog::warn("metrics server: accept failed: {}", ec.message());
        retry_timer.expires_after(kAcceptRetryDelay);
        retry_timer.async_wait([this](beast::error_code) { Accept(); });
        return;
      }
      std::erase_if(sessions, [](const std::weak_ptr<Session>& s) { return s.expired(); });
      auto session = std::make_shared<Session>(std::move(socket), &render);
      sessions.push_back(session);
      session->Start();
      Accept();
    });
  }

  // The server thread: no exception escapes it.
  void Run() {
    for (;;) {
      try {
        io_context.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("metrics server: {}", e.what());
      }
    }
  }

  std::function<std::string()> render;
  asio::io_context io_context;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  std::vector<std::weak_ptr<Session>> sessions;  // server thread only
  int port = 0;
  std::thread thread;
};

MetricsHttpServer::MetricsHttpServer(std::string bind_address, int port,
                                     std::function<std::string()> render)
    : impl_(std::make_unique<Impl>(std::move(render))) {
  if (!impl_->render) throw InvalidArgument("metrics server: no render function");
  if (port < 0 || port > 65535) {
    throw InvalidArgument("metrics server: port " + std::to_string(port) + " not in [0, 65535]");
  }
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(bind_address, ec);
  if (ec) throw InvalidArgument("metrics server: bad bind address '" + bind_address + "'");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  const std::string where = bind_address + ":" + std::to_string(port);
  tcp::acceptor& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw Unavailable("metrics server: cannot listen on " + where + ": " + ec.message());
  impl_->port = acceptor.local_endpoint().port();
  impl_->Accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->Run(); });
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

int MetricsHttpServer::port() const { return impl_->port; }

void MetricsHttpServer::Stop() {
  if (!impl_->thread.joinable()) return;
  // Closing everything on the server thread leaves io_context.run() without
  // work, so it returns and the thread ends.
  asio::post(impl_->io_context, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry_timer.cancel();
    for (const auto& weak : impl->sessions) {
      if (auto session = weak.lock()) session->Close();
    }
    impl->sessions.clear();
  });
  impl_->thread.join();
}

}  // namespace rlswarm::observe
