// Running a check plan under a per-case watchdog (run_plan in core/check.h).
//
// Each case runs on a worker thread while the calling thread waits for it with a time limit.
// A kernel that never returns cannot be stopped from inside the process: its worker is left to
// it, the case is reported TIMEOUT, and the next case starts on a fresh worker. The process
// ends without joining such workers (abandoned_case_workers tells the CLI to), which also ends
// a kernel still running on a GPU.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/check.h"

namespace dnnb {

namespace {

std::atomic<int> g_abandoned_workers{0};

// One thread that runs the jobs handed to it, one at a time.
class CaseWorker {
 public:
  CaseWorker() : shared_(std::make_shared<Shared>()) {
    std::shared_ptr<Shared> s = shared_;
    thread_ = std::thread([s] { loop(*s); });
  }
  CaseWorker(const CaseWorker&) = delete;
  CaseWorker& operator=(const CaseWorker&) = delete;
  ~CaseWorker() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(shared_->m);
      shared_->stop = true;
    }
    shared_->cv.notify_all();
    thread_.join();
  }

  // The job's result, or nothing when it has not returned after timeout_s (<= 0: no limit).
  std::optional<CaseResult> run(std::function<CaseResult()> job, double timeout_s) {
    std::unique_lock<std::mutex> lock(shared_->m);
    shared_->job = std::move(job);
    shared_->done = false;
    shared_->cv.notify_all();
    auto done = [&] { return shared_->done; };
    if (timeout_s > 0) {
      if (!shared_->cv.wait_for(lock, std::chrono::duration<double>(timeout_s), done)) return std::nullopt;
    } else {
      shared_->cv.wait(lock, done);
    }
    return std::move(shared_->result);
  }

  // Leaves the thread to the job it is stuck in; the shared state lives as long as it does.
  void abandon() {
    thread_.detach();
    ++g_abandoned_workers;
  }

 private:
  struct Shared {
    std::mutex m;
    std::condition_variable cv;
    std::function<CaseResult()> job;
    CaseResult result;
    bool done = false;
    bool stop = false;
  };

  static void loop(Shared& s) {
    std::unique_lock<std::mutex> lock(s.m);
    for (;;) {
      s.cv.wait(lock, [&] { return s.stop || s.job; });
      if (s.stop) return;
      std::function<CaseResult()> job = std::move(s.job);
      s.job = nullptr;
      lock.unlock();
      CaseResult r = job();
      lock.lock();
      s.result = std::move(r);
      s.done = true;
      s.cv.notify_all();
    }
  }

  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

int abandoned_case_workers() { return g_abandoned_workers.load(); }

namespace {

// The cases of one device (or the cases with no device), in plan order, on their own worker.
void run_cases(const std::vector<size_t>& indices, const std::vector<PlannedCase>& plan, const FixtureManifest& manifest,
               const CheckOptions& options, const std::function<void(size_t, CaseResult&)>& report) {
  auto worker = std::make_unique<CaseWorker>();
  // Devices still busy with a case that timed out: device -> that case's id.
  std::map<const DeviceRuntime*, std::string> busy;
  for (size_t i : indices) {
    const PlannedCase& pc = plan[i];
    CaseResult r;
    if (auto it = busy.find(pc.device); pc.device != nullptr && it != busy.end()) {
      r = result_of(pc);
      r.status = StatusCode::skipped;
      r.reason = "not run: " + r.device + " is still running case " + it->second + ", which timed out";
    } else {
      std::optional<CaseResult> done =
          worker->run([&pc, &manifest, &options] { return run_case(pc, manifest, options); }, options.case_timeout_s);
      if (done) {
        r = std::move(*done);
      } else {
        worker->abandon();  // its thread and state outlive the object; the process ends them
        worker = std::make_unique<CaseWorker>();
        r = result_of(pc);
        r.status = StatusCode::error;
        r.timed_out = true;
        r.seconds = options.case_timeout_s;
        r.reason = "did not return within " + seconds_text(options.case_timeout_s) +
                   " s (--case-timeout); the run goes on without it";
        // The host CPU's next case runs on the fresh worker; any other device is still
        // occupied by the stuck kernel (a GPU stream, an OpenCL queue).
        if (pc.device != nullptr && pc.device->info().kind != DeviceKind::cpu) busy[pc.device] = r.case_id;
      }
    }
    report(i, r);
  }
}

}  // namespace

std::vector<CaseResult> run_plan(const std::vector<PlannedCase>& plan, const FixtureManifest& manifest,
                                 const CheckOptions& options,
                                 const std::function<void(size_t, const CaseResult&)>& on_result) {
  std::vector<CaseResult> results(plan.size());
  std::mutex report_mutex;
  auto report = [&](size_t i, CaseResult& r) {
    std::lock_guard<std::mutex> lock(report_mutex);
    if (on_result) on_result(i, r);
    results[i] = std::move(r);
  };
  // One group per device, in the order each first appears; cases without a device (skipped)
  // join the first group.
  std::vector<const DeviceRuntime*> order;
  std::map<const DeviceRuntime*, std::vector<size_t>> groups;
  for (size_t i = 0; i < plan.size(); ++i) {
    const DeviceRuntime* key = options.serial ? nullptr : plan[i].device;
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(i);
  }
  if (order.size() <= 1) {
    std::vector<size_t> all(plan.size());
    for (size_t i = 0; i < plan.size(); ++i) all[i] = i;
    run_cases(all, plan, manifest, options, report);
    return results;
  }
  // Devices run side by side, each its cases in plan order: a GPU, an OpenCL platform and the
  // host CPU do not wait for one another (the CPU backends share the cpu device, so they stay
  // one after another).
  std::vector<std::thread> threads;
  for (const DeviceRuntime* key : order)
    threads.emplace_back([&, key] { run_cases(groups[key], plan, manifest, options, report); });
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace dnnb
