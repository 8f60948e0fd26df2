/* CartPole-v1 as an rlswarm env plugin, in plain C99: the template for a
 * plugin of your own (README.md beside this file).
 *
 * The dynamics, constants, initial-state distribution, reward and
 * termination are those of rlswarm's built-in CartPole-v1 (Gymnasium's
 * classic CartPole), and so is the random number generator (xoshiro256++
 * seeded by SplitMix64, rlswarm's Rng), so that a seeded episode here is the
 * built-in's bit for bit. A plugin of your own can use any generator.
 *
 * Build with floating-point contraction off (-ffp-contract=off, as this
 * folder's CMakeLists.txt does): a fused multiply-add would round
 * differently from the built-in env in the last bits.
 *
 * Config (env.kwargs): none; any JSON object is accepted and ignored.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rlswarm/plugin_api.h"

/* Gymnasium's CartPoleEnv.__init__, the derived constants computed as it
 * computes them (each macro is one parenthesised float64 expression). */
#define GRAVITY 9.8
#define MASS_CART 1.0
#define MASS_POLE 0.1
#define TOTAL_MASS (MASS_POLE + MASS_CART)
#define LENGTH 0.5 /* half the pole's length */
#define POLE_MASS_LENGTH (MASS_POLE * LENGTH)
#define FORCE_MAG 10.0
#define TAU 0.02 /* seconds per step */
#define PI 3.141592653589793
#define THETA_THRESHOLD (12 * 2 * PI / 360) /* 12 degrees */
#define X_THRESHOLD 2.4
#define INIT_BOUND 0.05 /* each state variable starts in U(-0.05, 0.05) */

/* rlswarm's Rng (common/random.h): SplitMix64 seeding, xoshiro256++. */
typedef struct {
  uint64_t s[4];
} Rng;

static uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static void RngSeed(Rng* rng, uint64_t seed) {
  int i;
  for (i = 0; i < 4; ++i) rng->s[i] = Mix64(seed + 0x9e3779b97f4a7c15ULL * (uint64_t)i);
}

static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t RngNext(Rng* rng) {
  uint64_t* s = rng->s;
  const uint64_t result = Rotl(s[0] + s[3], 23) + s[0];
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = Rotl(s[3], 45);
  return result;
}

/* Uniform in [low, high) from 53 random bits. */
static double RngUniform(Rng* rng, double low, double high) {
  return low + (high - low) * ((double)(RngNext(rng) >> 11) * 0x1.0p-53);
}

typedef struct {
  double x, x_dot, theta, theta_dot; /* float64, as Gymnasium computes */
  Rng rng;
  const char* error;
} CartPole;

static void WriteObservation(const CartPole* env, void* observation) {
  float obs[4];
  obs[0] = (float)env->x;
  obs[1] = (float)env->x_dot;
  obs[2] = (float)env->theta;
  obs[3] = (float)env->theta_dot;
  memcpy(observation, obs, sizeof(obs));
}

static void* Create(const char* config_json, char* error, size_t error_size) {
  CartPole* env;
  (void)config_json;
  env = (CartPole*)calloc(1, sizeof(CartPole));
  if (env == NULL) {
    if (error_size > 0) {
      strncpy(error, "out of memory", error_size - 1);
      error[error_size - 1] = '\0';
    }
    return NULL;
  }
  /* rlswarm seeds every env on its first reset; this only keeps a caller
   * that does not from an all-zero xoshiro state (which stays zero). */
  RngSeed(&env->rng, 0);
  return env;
}

static void Spec(void* env, rlswarm_env_spec* spec) {
  /* Gymnasium's observation Box is float32, so its bounds are the float32
   * roundings; the velocities are unbounded. */
  static const double kHigh[4] = {(float)(X_THRESHOLD * 2), INFINITY, (float)(THETA_THRESHOLD * 2),
                                  INFINITY};
  static const double kLow[4] = {-(float)(X_THRESHOLD * 2), -INFINITY,
                                 -(float)(THETA_THRESHOLD * 2), -INFINITY};
  (void)env;
  spec->name = "CartPole-v1";
  spec->observation_dtype = RLSWARM_DTYPE_FLOAT32;
  spec->observation_rank = 1;
  spec->observation_shape[0] = 4;
  spec->observation_low = kLow;
  spec->observation_high = kHigh;
  spec->observation_bounds_count = 4;
  spec->num_actions = 2; /* 0: push left, 1: push right */
  spec->max_episode_steps = 500;
}

static int Reset(void* handle, const uint64_t* seed, void* observation) {
  CartPole* env = (CartPole*)handle;
  if (seed != NULL) RngSeed(&env->rng, *seed);
  /* Gymnasium draws x, x_dot, theta, theta_dot in this order. */
  env->x = RngUniform(&env->rng, -INIT_BOUND, INIT_BOUND);
  env->x_dot = RngUniform(&env->rng, -INIT_BOUND, INIT_BOUND);
  env->theta = RngUniform(&env->rng, -INIT_BOUND, INIT_BOUND);
  env->theta_dot = RngUniform(&env->rng, -INIT_BOUND, INIT_BOUND);
  WriteObservation(env, observation);
  return 0;
}

static int Step(void* handle, const void* action, void* observation, rlswarm_step_result* result) {
  CartPole* env = (CartPole*)handle;
  int64_t a;
  double force, costheta, sintheta, temp, thetaacc, xacc;
  memcpy(&a, action, sizeof(a)); /* rlswarm has checked it is 0 or 1 */
  /* Florian (2007), "Correct equations for the dynamics of the cart-pole
   * system", as in Gymnasium's step(), operand order kept. */
  force = a == 1 ? FORCE_MAG : -FORCE_MAG;
  costheta = cos(env->theta);
  sintheta = sin(env->theta);
  temp = (force + POLE_MASS_LENGTH * (env->theta_dot * env->theta_dot) * sintheta) / TOTAL_MASS;
  thetaacc = (GRAVITY * sintheta - costheta * temp) /
             (LENGTH * (4.0 / 3.0 - MASS_POLE * (costheta * costheta) / TOTAL_MASS));
  xacc = temp - POLE_MASS_LENGTH * thetaacc * costheta / TOTAL_MASS;

  /* Euler: positions advance with the old velocities. */
  env->x = env->x + TAU * env->x_dot;
  env->x_dot = env->x_dot + TAU * xacc;
  env->theta = env->theta + TAU * env->theta_dot;
  env->theta_dot = env->theta_dot + TAU * thetaacc;

  /* +1 on every step, the terminating one included; the 500-step limit is
   * rlswarm's (max_episode_steps), so truncated stays 0. */
  result->reward = 1.0f;
  result->terminated = env->x < -X_THRESHOLD || env->x > X_THRESHOLD ||
                       env->theta < -THETA_THRESHOLD || env->theta > THETA_THRESHOLD;
  WriteObservation(env, observation);
  return 0;
}

static const char* LastError(void* handle) { return ((CartPole*)handle)->error; }

static void Destroy(void* handle) { free(handle); }

static const rlswarm_env_plugin kCartPole = {
    RLSWARM_PLUGIN_ABI_VERSION, Create, Spec, Reset, Step, LastError, Destroy,
};

/* One env in this library: plugin:PATH.so and plugin:PATH.so:CartPole-v1
 * both name it. */
RLSWARM_PLUGIN_EXPORT const rlswarm_env_plugin* rlswarm_env_plugin_v1(const char* name) {
  if (name == NULL || strcmp(name, "CartPole-v1") == 0) return &kCartPole;
  return NULL;
}
