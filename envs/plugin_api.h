/* The C ABI of rlswarm env plugins: an environment written in C or C++,
 * built as a shared library, and trained with `env.name: plugin:PATH.so` or
 * `plugin:PATH.so:NAME` without rebuilding rlswarm.
 *
 * This header is all a plugin needs: it includes only the C standard headers
 * and compiles as C99 and as C++. The build copies it to
 * <build>/include/rlswarm/plugin_api.h; examples/plugin_env/ is a complete
 * plugin (CartPole in C).
 *
 * The library exports one function, RLSWARM_ENV_PLUGIN_ENTRY (see below),
 * which returns the function table of the env called NAME. rlswarm loads the
 * library once per file (dlopen, RTLD_NOW | RTLD_LOCAL), never unloads it,
 * and checks the table and every env's spec before stepping it.
 *
 * Contract, the same as rlswarm's built-in envs (envs/env.h):
 *   - rlswarm validates every action against the spec before calling step,
 *     counts steps and applies the time limit (max_episode_steps), and never
 *     steps an env before reset or after an episode ended.
 *   - observations are written into memory rlswarm owns: exactly the spec's
 *     shape and dtype, row-major, suitably aligned for the dtype.
 *   - one env is called from one thread at a time, but different envs of one
 *     library may be called from different threads at once (a VectorEnv with
 *     num_threads > 1): keep per-env state in the env, not in globals.
 *   - nothing may unwind through these functions: a C++ plugin catches its
 *     exceptions and returns an error instead.
 *   - a reset or step that returns nonzero has failed: rlswarm throws an error
 *     carrying last_error's message and resets the env before stepping it
 *     again.
 */
#ifndef RLSWARM_PLUGIN_API_H_
#define RLSWARM_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. A plugin stores it in its table's
 * abi_version; rlswarm refuses a table of another version. */
#define RLSWARM_PLUGIN_ABI_VERSION 1

/* The exported entry point: `const rlswarm_env_plugin*
 * rlswarm_env_plugin_v1(const char* name)`. `name` is the NAME of
 * plugin:PATH.so:NAME, or NULL without one (the library's default env).
 * Returns NULL for a name the library does not know. The table must stay
 * valid while the library is loaded (a static const table is the usual way).
 * May be called from any thread. Export it with RLSWARM_PLUGIN_EXPORT. */
#define RLSWARM_ENV_PLUGIN_ENTRY rlswarm_env_plugin_v1
#define RLSWARM_ENV_PLUGIN_ENTRY_NAME "rlswarm_env_plugin_v1"

#if defined(__GNUC__) || defined(__clang__)
#define RLSWARM_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define RLSWARM_PLUGIN_EXPORT
#endif

/* Element types; the numbering is part of the ABI. */
typedef enum rlswarm_dtype {
  RLSWARM_DTYPE_BOOL = 0, /* one byte, 0 or 1 */
  RLSWARM_DTYPE_UINT8 = 1,
  RLSWARM_DTYPE_INT32 = 2,
  RLSWARM_DTYPE_INT64 = 3,
  RLSWARM_DTYPE_FLOAT32 = 4,
  RLSWARM_DTYPE_FLOAT64 = 5
} rlswarm_dtype;

/* Most observation dimensions and continuous action elements a spec has. */
#define RLSWARM_PLUGIN_MAX_DIMS 8
#define RLSWARM_PLUGIN_MAX_ACTION_DIMS 64
/* Longest env name, in bytes, without the terminating NUL. */
#define RLSWARM_PLUGIN_MAX_NAME 128

/* What an env's observations and actions look like. rlswarm zero-fills it
 * before calling spec() and copies it as soon as spec() returns: the string
 * and arrays it points to must stay valid until rlswarm's next call on that
 * env (static data or members of the env). */
typedef struct rlswarm_env_spec {
  /* Shown in logs and errors: printable ASCII, 1..RLSWARM_PLUGIN_MAX_NAME
   * bytes. */
  const char* name;

  /* Observation: `observation_rank` dimensions (1..RLSWARM_PLUGIN_MAX_DIMS),
   * each > 0, of `observation_dtype` (an rlswarm_dtype). */
  int32_t observation_dtype;
  int32_t observation_rank;
  int64_t observation_shape[RLSWARM_PLUGIN_MAX_DIMS];
  /* Observation bounds: both NULL (unbounded for floats, the dtype's range for
   * integers and bool), or both `observation_bounds_count` values, where the
   * count is 1 (one bound for every element) or the number of elements
   * (row-major). Each low <= high, no NaN; +-INFINITY marks an unbounded
   * float element. */
  const double* observation_low;
  const double* observation_high;
  int64_t observation_bounds_count;

  /* Actions: discrete (num_actions > 0: one int64 in [0, num_actions)) or
   * continuous (num_actions == 0: action_dims float32 values, 1..
   * RLSWARM_PLUGIN_MAX_ACTION_DIMS, element i within [action_low[i],
   * action_high[i]], both finite and low < high). */
  int64_t num_actions;
  int32_t action_dims;
  const double* action_low;
  const double* action_high;

  /* Episodes end truncated after this many steps (rlswarm counts them;
   * env.max_episode_steps overrides it); 0: no limit. */
  int64_t max_episode_steps;
} rlswarm_env_spec;

/* What one step produced. rlswarm zero-fills it before each step. */
typedef struct rlswarm_step_result {
  float reward;
  /* Nonzero: the episode reached a terminal state (no bootstrapping). */
  int32_t terminated;
  /* Nonzero: the env cut the episode itself (bootstrapping from the final
   * observation), e.g. a game's own frame limit. Leave the time limit to
   * rlswarm (max_episode_steps). */
  int32_t truncated;
} rlswarm_step_result;

/* The functions of one env kind. `env` is what create returned. */
typedef struct rlswarm_env_plugin {
  /* RLSWARM_PLUGIN_ABI_VERSION as the plugin was compiled. The first member
   * in every version, so that rlswarm can read it from any table. */
  uint32_t abi_version;

  /* A new env, configured by `config_json`: env.kwargs as a JSON object
   * ("{}" when there are none). On failure returns NULL and writes a
   * NUL-terminated message into `error` (at most error_size bytes). */
  void* (*create)(const char* config_json, char* error, size_t error_size);

  /* Fills `spec` (zero-filled by rlswarm). Called once, after create; every
   * env a library creates for the same NAME and config must have the same
   * spec. */
  void (*spec)(void* env, rlswarm_env_spec* spec);

  /* Starts an episode and writes its first observation. `seed` non-NULL:
   * reseed the env's generator with *seed first, so that the episode depends
   * only on the seed; NULL: continue the generator's stream (Gymnasium's
   * reset(seed=None)). rlswarm passes a seed on an env's first reset. Returns
   * 0, or nonzero on failure (see last_error). */
  int (*reset)(void* env, const uint64_t* seed, void* observation);

  /* Advances one step. `action` points to one int64_t (discrete) or to
   * action_dims floats (continuous), already validated. Writes the next
   * observation and `result`. Returns 0, or nonzero on failure (see
   * last_error). */
  int (*step)(void* env, const void* action, void* observation, rlswarm_step_result* result);

  /* The message of the env's last failed reset or step, NUL-terminated, valid
   * until the next call on the env. May be NULL (then rlswarm says only that
   * the call failed). */
  const char* (*last_error)(void* env);

  /* Frees the env. */
  void (*destroy)(void* env);
} rlswarm_env_plugin;

typedef const rlswarm_env_plugin* (*rlswarm_env_plugin_entry)(const char* name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RLSWARM_PLUGIN_API_H_ */
