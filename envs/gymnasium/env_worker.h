#pragma once

// EnvWorker: one Gymnasium vector env running in a Python worker process
// (env_worker.py, compiled into the binary) that a VectorEnv steps through
// shared memory.
//
// Why a process and not CPython embedded in the actor: the user's Python
// (any version, any venv: env.python) need not match anything rlswarm was
// built with; actors that are threads of one process (embedded launch) do not
// share a GIL; and an env that segfaults, leaks or hangs takes down its worker,
// not the actor: the actor sees the worker's exit (code or signal) as an
// EnvFailure and starts a new one.
//
// Data path per vector step: the actions go into the shared block, one byte
// goes down a SOCK_SEQPACKET socket, the worker steps the vector env, writes
// observations, final observations, rewards and flags into the block and
// answers one byte. Errors come back as JSON with the Python traceback.
//
// The worker dies with the actor (PR_SET_PDEATHSIG and the socket's EOF).
// Not thread-safe, except RequestStop().

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/errors.h"
#include "envs/env_failure.h"
#include "envs/registry.h"
#include "envs/render.h"
#include "envs/spec.h"

namespace rlswarm::envs::gymnasium {

// The env raised, returned something malformed, or its worker died: what
// happened (env id, step, field) and the Python traceback where there is one.
using envs::EnvFailure;

struct EnvWorkerOptions {
  std::string env_id;  // what gymnasium.make takes (no "gymnasium:" prefix)
  EnvOptions env;      // kwargs_json, python, vectorization_mode, max_episode_steps
  std::int64_t num_envs = 1;
  // The vector env's autoreset mode ("" = its default, next_step).
  std::string autoreset_mode;
  // How long importing gymnasium and making the envs may take.
  std::chrono::seconds startup_timeout{300};
};

class EnvWorker {
 public:
  // Starts the worker and waits for its hello. Throws InvalidArgument for a
  // config error (no such module or env, an unsupported space, no Python),
  // EnvFailure if the worker dies or times out while starting.
  explicit EnvWorker(const EnvWorkerOptions& options);
  ~EnvWorker();  // asks the worker to close; SIGKILL after a grace period
  EnvWorker(const EnvWorker&) = delete;
  EnvWorker& operator=(const EnvWorker&) = delete;

  // The env's spec, from one env made in a short-lived worker: the answer is
  // remembered per (env id, options) for the life of the process.
  static EnvSpec Describe(std::string_view env_id, const EnvOptions& options);

  const EnvSpec& spec() const { return spec_; }
  // "next_step", "same_step" or "disabled": what the vector env does.
  const std::string& autoreset_mode() const { return autoreset_mode_; }
  std::int64_t num_envs() const { return num_envs_; }
  pid_t pid() const { return pid_; }

  // The shared arrays, [num_envs, ...] each (see env_worker.py's Layout).
  std::byte* array(std::string_view name) const;

  // Commands; each returns when the worker has answered. Throw EnvFailure.
  void Reset(bool seeded);        // every env, with seeds from array("seeds")
  void ResetMasked(bool seeded);  // the envs marked in array("reset_mask")
  void Step();                    // with array("actions")
  // Env `index`'s current frame, for an env made with render_mode
  // "rgb_array". Throws InvalidArgument when the env cannot render (no
  // render mode, a vector env that renders only as a whole), EnvFailure as
  // the other commands.
  Image Render(std::int64_t index);

  // From any thread: a command in flight, or the next one, gives the worker
  // `grace` to answer, then kills it and throws Cancelled. For stopping an
  // actor whose env hangs.
  void RequestStop(std::chrono::milliseconds grace = std::chrono::seconds(2));

 private:
  EnvWorker(const EnvWorkerOptions& options, bool describe);
  void Start(const EnvWorkerOptions& options, bool describe);
  void Send(std::string_view message);
  // Waits for the answer to the last command: "K", or an error.
  void AwaitOk(std::string_view what);
  // Receives one message, and the file descriptor it carries if any.
  std::string Receive(std::chrono::steady_clock::time_point deadline, int* fd,
                      std::string_view what);
  [[noreturn]] void FailDead(std::string_view what);
  void Kill();

  std::string env_id_;
  EnvSpec spec_;
  std::string autoreset_mode_;
  std::int64_t num_envs_ = 0;
  pid_t pid_ = -1;
  int socket_ = -1;
  std::byte* shm_ = nullptr;
  std::size_t shm_size_ = 0;
  std::map<std::string, std::size_t, std::less<>> offsets_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<std::int64_t> stop_grace_ms_{2000};
};

}  // namespace rlswarm::envs::gymnasium
