// The multi-process scenarios of the checkpoint and publishing tests (see
// harness.h):
//   ckpt_save: float64 full_shard training with Adam and a Polyak target
//     for steps [0, 5), a checkpoint under <dir>/ckpt, then steps [5, 10);
//     rank 0 writes the online and target parameters to <dir>/ref.*.bin.
//   ckpt_resume: loads the newest checkpoint under <dir>/ckpt at this world
//     size, trains steps [5, 10) and writes <dir>/w<W>.*.bin and the
//     optimizer step to <dir>/w<W>.step.
//   dqn_replay: rank 0 hosts an in-process CartPole replay shard; every
//     rank runs a DqnLearner on it (its own sampler, batch 64 / W) with a
//     frozen target for 200 updates; each rank writes "<items sampled>
//     <first mean |td|> <last mean |td|>" to <dir>/dqn.rank<r>.txt.
//   dqn_resume_exact: rank 0 hosts a uniform CartPole replay shard; the
//     ranks train 20 updates straight (prefetching, Polyak target), writing
//     <dir>/straight.online.bin and .target.bin; then, from the same start,
//     10 updates, a checkpoint, a new learner that resumes from it, and 10
//     more, writing <dir>/resumed.*.bin (rank 0), and "<update count after
//     the resume>" to <dir>/resumed.updates.
//   dqn_stop_waiting: rank 0 samples an empty shard (its own: never a batch),
//     rank 1 a full one (its own); five Update()s, then rank 0 asks to stop
//     while rank 1 does not; each rank writes "<updates> <each Update's
//     result> <stop_agreed> <1 when SaveCheckpoint published>" to
//     <dir>/stop.rank<r>.txt.
//   publish: every rank publishes its part (parts mode) and rank 0 the full
//     model (full mode); rank 0 subscribes to all of them, merges the parts
//     and writes "<full equal> <parts equal> <num parts>" to <dir>/publish.txt.

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "learner/algorithms/dqn_learner.h"
#include "learner/apex/weights_broadcaster.h"
#include "learner/checkpoint/checkpoint.h"
#include "learner/testing/cartpole_replay.h"
#include "models/q_networks.h"
#include "models/weights_parts.h"
#include "models/weights_wire.h"
#include "replay/service/transition.h"
#include "rpc/broadcast.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {
namespace {

ShardedModelOptions CheckpointCaseOptions() {
  ShardedModelOptions o;
  o.sharding.mixed_precision = MixedPrecisionPolicy::Uniform(at::kDouble);
  o.optimizer.kind = OptimizerKind::kAdam;
  o.optimizer.lr = 1e-2;
  o.optimizer.max_grad_norm = 1.0;
  o.seed = 11;
  return o;
}

void WriteBoth(ShardedModel& model, ShardedModel& target, const std::string& prefix) {
  const models::NamedTensors online = model.FullParameters();
  const models::NamedTensors slow = target.FullParameters();
  if (model.communicator().rank() == 0) {
    WriteDoubles(prefix + ".online.bin", Flatten(online));
    WriteDoubles(prefix + ".target.bin", Flatten(slow));
  }
}

void Barrier(Communicator& comm) {
  at::Tensor t = at::zeros({1});
  comm.ControlAllReduceSum(t, "barrier");
}

bool Equal(const models::NamedTensors& a, const models::NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !at::equal(a[i].second, b[i].second)) return false;
  }
  return true;
}

void WriteEndpoints(const std::string& path, const WeightsBroadcaster& b) {
  std::ofstream(path + ".tmp") << b.endpoint() << "\n" << b.snapshot_endpoint() << "\n";
  std::filesystem::rename(path + ".tmp", path);
}

rpc::VersionedBlob Receive(const std::string& path) {
  std::ifstream in(path);
  rpc::SubscriberOptions o;
  std::getline(in, o.endpoint);
  std::getline(in, o.snapshot_endpoint);
  rpc::Subscriber subscriber(o);
  std::optional<rpc::VersionedBlob> blob = subscriber.WaitNewer(0, std::chrono::seconds(10));
  if (!blob) throw std::runtime_error("no weights from " + o.endpoint);
  return *blob;
}

void Publish(std::shared_ptr<Communicator> comm, const std::string& dir) {
  const models::ModelSpec spec = CaseSpec("mlp");
  ShardedModelOptions options;
  options.seed = 5;
  ShardedModel model(spec, options, comm);
  const int rank = comm->rank();
  WeightsPublishingOptions full_options, parts_options;
  parts_options.mode = PublishMode::kParts;
  WeightsBroadcaster full(full_options, model);
  WeightsBroadcaster parts(parts_options, model);
  if (parts.publishes()) WriteEndpoints(dir + "/parts." + std::to_string(rank), parts);
  if (full.publishes()) WriteEndpoints(dir + "/full", full);
  // Publish before anyone subscribes: the snapshot endpoint serves late
  // joiners the current version.
  full.Publish(7);
  parts.Publish(7);
  Barrier(*comm);
  const models::NamedTensors expected = model.FullParameters();
  if (rank == 0) {
    const rpc::VersionedBlob blob = Receive(dir + "/full");
    const bool full_ok =
        blob.version == 7 && Equal(models::DecodeWeights(blob.payloads).tensors, expected);
    std::vector<models::WeightsPart> received;
    bool versions_ok = true;
    for (int r = 0; r < parts.num_parts(); ++r) {
      const rpc::VersionedBlob part = Receive(dir + "/parts." + std::to_string(r));
      versions_ok = versions_ok && part.version == 7;
      received.push_back(models::DecodeWeights(part.payloads));
    }
    const bool parts_ok = versions_ok && Equal(models::MergeWeightParts(received), expected);
    std::ofstream(dir + "/publish.txt") << full_ok << " " << parts_ok << " " << parts.num_parts();
  }
  Barrier(*comm);  // keeps every publisher up until rank 0 has read them
}

// A target network that no update of a scenario copies.
DqnOptions FrozenTarget() {
  DqnOptions dqn;
  dqn.target_tau = 0;
  dqn.target_update_interval = 1000000;
  return dqn;
}

void DqnWithReplay(std::shared_ptr<Communicator> comm, const std::string& dir) {
  std::unique_ptr<CartPoleReplay> replay;
  if (comm->rank() == 0) {
    replay = std::make_unique<CartPoleReplay>(2000);
    std::ofstream(dir + "/replay.tmp") << replay->endpoint() << "\n";
    std::filesystem::rename(dir + "/replay.tmp", dir + "/replay");
  }
  Barrier(*comm);
  ApeXOptions o;
  o.batch_size = 64;
  o.model.optimizer.lr = 5e-3;
  o.model.optimizer.max_grad_norm = 10;
  o.model.seed = 3;
  o.publish_interval = 0;
  o.log_interval = std::chrono::milliseconds(0);
  std::getline(std::ifstream(dir + "/replay"), o.sampler.endpoints.emplace_back());
  DqnLearner learner(models::MakeMlpSpec(models::MlpOptions{}), o, FrozenTarget(), comm);
  for (int i = 0; i < 10; ++i) learner.Update();
  const double first = learner.TakeMetrics().mean_abs_td;
  for (int i = 0; i < 180; ++i) learner.Update();
  learner.TakeMetrics();
  for (int i = 0; i < 10; ++i) learner.Update();
  const double last = learner.TakeMetrics().mean_abs_td;
  std::ofstream(dir + "/dqn.rank" + std::to_string(comm->rank()) + ".txt")
      << learner.sampler().stats().items << " " << first << " " << last;
  Barrier(*comm);  // rank 0's replay shard stays up until every rank is done
}

// A replay shard of this process whose endpoint the other ranks read from
// <dir>/<name> (written atomically).
void ShareEndpoint(const std::string& endpoint, const std::string& dir, const std::string& name) {
  std::ofstream(dir + "/" + name + ".tmp") << endpoint << "\n";
  std::filesystem::rename(dir + "/" + name + ".tmp", dir + "/" + name);
}

std::string ReadEndpoint(const std::string& dir, const std::string& name) {
  std::string endpoint;
  std::getline(std::ifstream(dir + "/" + name), endpoint);
  return endpoint;
}

DqnOptions ResumeCaseDqn() {
  DqnOptions dqn;
  dqn.target_tau = 0.05;
  return dqn;
}

ApeXOptions ResumeCaseOptions(const std::string& endpoint, const std::string& ckpt_dir) {
  ApeXOptions o;
  o.batch_size = 64;
  o.model.optimizer.lr = 5e-3;
  o.model.optimizer.max_grad_norm = 10;
  o.model.seed = 3;
  o.publish_interval = 0;
  o.checkpoint_interval = 0;
  o.async_checkpoint = false;
  o.checkpoint_dir = ckpt_dir;
  o.log_interval = std::chrono::milliseconds(0);
  o.sampler.endpoints = {endpoint};
  o.sampler.seed = 9;
  return o;
}

void TrainUpdates(DqnLearner& learner, int64_t until) {
  while (learner.updates() < until) learner.Update();
}

void ResumeExact(std::shared_ptr<Communicator> comm, const std::string& dir) {
  std::unique_ptr<CartPoleReplay> replay;
  if (comm->rank() == 0) {
    replay = std::make_unique<CartPoleReplay>(2000, 0, 0, /*prioritized=*/false);
    ShareEndpoint(replay->endpoint(), dir, "replay");
  }
  Barrier(*comm);
  const std::string endpoint = ReadEndpoint(dir, "replay");
  const models::ModelSpec spec = models::MakeMlpSpec(models::MlpOptions{});
  {
    DqnLearner straight(spec, ResumeCaseOptions(endpoint, dir + "/unused"), ResumeCaseDqn(), comm);
    TrainUpdates(straight, 20);
    WriteBoth(straight.model(), straight.target(), dir + "/straight");
  }
  {
    DqnLearner first(spec, ResumeCaseOptions(endpoint, dir + "/ckpt"), ResumeCaseDqn(), comm);
    TrainUpdates(first, 10);
    first.SaveCheckpoint();
  }                // its prefetched 11th batch is thrown away
  Barrier(*comm);  // rank 0 publishes the manifest after the others returned
  DqnLearner resumed(spec, ResumeCaseOptions(endpoint, dir + "/ckpt"), ResumeCaseDqn(), comm);
  if (!resumed.Resume()) throw std::runtime_error("no checkpoint to resume from");
  if (comm->rank() == 0) std::ofstream(dir + "/resumed.updates") << resumed.updates();
  TrainUpdates(resumed, 20);
  WriteBoth(resumed.model(), resumed.target(), dir + "/resumed");
  Barrier(*comm);  // rank 0's replay shard stays up until every rank is done
}

void StopWhileWaiting(std::shared_ptr<Communicator> comm, const std::string& dir) {
  const int rank = comm->rank();
  std::unique_ptr<CartPoleReplay> full;
  std::unique_ptr<replay::ReplayService> empty;
  if (rank == 0) {
    replay::ReplayServiceOptions o;
    o.table.signature = replay::TransitionSignature(DType::kFloat32, {4}, DType::kInt64, {});
    o.table.capacity = 100;
    o.server.endpoint = "tcp://127.0.0.1:*";
    empty = std::make_unique<replay::ReplayService>(std::move(o));
    empty->Start();
  } else {
    full = std::make_unique<CartPoleReplay>(500);
  }
  ApeXOptions o =
      ResumeCaseOptions(rank == 0 ? empty->endpoint() : full->endpoint(), dir + "/ckpt");
  o.sampler.timeout = std::chrono::milliseconds(200);
  DqnLearner learner(models::MakeMlpSpec(models::MlpOptions{}), o, {}, comm);
  std::string results;
  for (int i = 0; i < 5; ++i) results += learner.Update() ? '1' : '0';
  results += learner.Update(/*stop_requested=*/rank == 0) ? '1' : '0';
  const bool agreed = learner.stop_agreed();
  const std::string saved = learner.SaveCheckpoint();
  std::ofstream(dir + "/stop.rank" + std::to_string(rank) + ".txt")
      << learner.updates() << " " << results << " " << agreed << " "
      << std::filesystem::exists(saved);
  Barrier(*comm);
  if (empty) empty->Stop();
}

}  // namespace

void RunDqnScenario(const std::string& scenario, std::shared_ptr<Communicator> comm,
                    const std::string& dir) {
  if (scenario == "publish") return Publish(comm, dir);
  if (scenario == "dqn_replay") return DqnWithReplay(comm, dir);
  if (scenario == "dqn_resume_exact") return ResumeExact(comm, dir);
  if (scenario == "dqn_stop_waiting") return StopWhileWaiting(comm, dir);
  const models::ModelSpec spec = CaseSpec("mlp");
  ShardedModel model(spec, CheckpointCaseOptions(), comm);
  std::unique_ptr<ShardedModel> target = model.MakeTarget();
  if (scenario == "ckpt_save") {
    TrainSteps(model, *target, spec, 0, 5);
    SaveCheckpoint(dir + "/ckpt", model, target.get(), CheckpointProgress{5, 11});
    TrainSteps(model, *target, spec, 5, 10);
    WriteBoth(model, *target, dir + "/ref");
  } else if (scenario == "ckpt_resume") {
    const std::optional<std::string> latest = FindLatestCheckpoint(dir + "/ckpt");
    if (!latest) throw std::runtime_error("no checkpoint");
    const CheckpointProgress progress = LoadCheckpoint(*latest, model, target.get());
    if (progress.update_count != 5) throw std::runtime_error("wrong update count");
    TrainSteps(model, *target, spec, 5, 10);
    const std::string prefix = dir + "/w" + std::to_string(comm->world_size());
    WriteBoth(model, *target, prefix);
    if (comm->rank() == 0) std::ofstream(prefix + ".step") << model.optimizer().step();
  } else {
    throw std::runtime_error("unknown scenario " + scenario);
  }
}

}  // namespace rlswarm::learner::testing
