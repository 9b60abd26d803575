// Regression gating: statistics, loading and matching (core/regression.h). The reports
// (Markdown, JUnit, JSON) are written by core/cli/cmd_compare.cpp.
#include "core/regression.h"

#include "core/problem.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

namespace dnnb {

namespace {

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// Inverse of the standard normal upper tail, by bisection (only the critical values of very
// large samples need it, once per comparison).
double normal_upper_quantile(double tail) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (normal_sf(mid) > tail ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// Number of arrangements of n x-values and m y-values with U = u, u = 0..n*m: the
// coefficients of the Gaussian binomial [n+m choose n]_q, built one factor
// (1 - q^(m+k)) / (1 - q^k) at a time (each step is again a Gaussian binomial, so the
// division by (1 - q^k), a running sum with stride k, is exact and stays non-negative).
std::vector<double> mann_whitney_null_counts(int n, int m) {
  if (n > m) std::swap(n, m);
  std::vector<double> poly(static_cast<size_t>(n) * m + 1, 0.0);
  poly[0] = 1;
  for (int k = 1; k <= n; ++k) {
    const size_t degree = static_cast<size_t>(k) * m;
    for (size_t i = degree; i >= static_cast<size_t>(m + k) && i <= degree; --i) poly[i] -= poly[i - m - k];
    for (size_t i = k; i <= degree; ++i) poly[i] += poly[i - k];
  }
  return poly;
}

// The null counts of the last sizes asked for: the gate asks for the same n, m for every case.
const std::vector<double>& cached_null_counts(int n, int m) {
  thread_local int cached_n = -1, cached_m = -1;
  thread_local std::vector<double> cached;
  if (n != cached_n || m != cached_m) {
    cached = mann_whitney_null_counts(n, m);
    cached_n = n;
    cached_m = m;
  }
  return cached;
}

constexpr size_t kExactIntervalMaxPairs = 40000;  // exact critical values up to 200 x 200 repetitions

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t k = v.size();
  return k == 0 ? 0 : k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

}  // namespace

double mann_whitney_exact_cdf(int n, int m, double u) {
  if (n <= 0 || m <= 0) return 1.0;
  const auto& counts = cached_null_counts(n, m);
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  if (u < 0) return 0.0;
  const size_t last = std::min(counts.size() - 1, static_cast<size_t>(std::floor(u)));
  double below = 0;
  for (size_t i = 0; i <= last; ++i) below += counts[i];
  return std::min(1.0, below / total);
}

MannWhitneyU mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y, Alternative alternative) {
  MannWhitneyU out;
  const size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return out;
  // Average ranks over the pooled sample; tie groups feed the variance correction.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(n);
  for (double v : x) pooled.push_back({v, 0});
  for (double v : y) pooled.push_back({v, 1});
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_x = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && pooled[j + 1].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i + 1);
    const double average_rank = (static_cast<double>(i + 1) + static_cast<double>(j + 1)) / 2;
    for (size_t k = i; k <= j; ++k)
      if (pooled[k].second == 0) rank_sum_x += average_rank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j + 1;
  }
  const double nn1 = static_cast<double>(n1), nn2 = static_cast<double>(n2);
  out.u1 = rank_sum_x - nn1 * (nn1 + 1) / 2;
  const double u2 = nn1 * nn2 - out.u1;
  // As scipy: the statistic whose upper tail is the p-value, doubled for two-sided.
  double u = out.u1, factor = 1;
  if (alternative == Alternative::less) u = u2;
  if (alternative == Alternative::two_sided) {
    u = std::max(out.u1, u2);
    factor = 2;
  }
  double p;
  out.exact = (n1 <= 8 || n2 <= 8) && !ties;
  if (out.exact) {
    // P(U >= u) = P(U <= n1 n2 - u) by symmetry.
    p = mann_whitney_exact_cdf(static_cast<int>(n1), static_cast<int>(n2), nn1 * nn2 - u);
  } else {
    const double nd = static_cast<double>(n);
    const double s = std::sqrt(nn1 * nn2 / 12 * ((nd + 1) - tie_term / (nd * (nd - 1))));
    p = s > 0 ? normal_sf((u - nn1 * nn2 / 2 - 0.5) / s) : 1.0;  // every value tied: no evidence
  }
  out.p_value = std::clamp(p * factor, 0.0, 1.0);
  return out;
}

ShiftInterval hodges_lehmann_shift(const std::vector<double>& x, const std::vector<double>& y, double confidence) {
  ShiftInterval out;
  const size_t n = x.size(), m = y.size();
  if (n == 0 || m == 0) return out;
  std::vector<double> diffs;
  diffs.reserve(n * m);
  for (double b : x)
    for (double a : y) diffs.push_back(a - b);
  std::sort(diffs.begin(), diffs.end());
  const size_t pairs = diffs.size();
  out.estimate = median_of(diffs);
  out.lower = -std::numeric_limits<double>::infinity();
  out.upper = std::numeric_limits<double>::infinity();
  // C = the largest k with P(U <= k - 1) <= (1 - confidence) / 2; the interval is
  // [D_(C), D_(nm + 1 - C)] of the sorted differences (Hollander & Wolfe, ch. 4.3).
  const double tail = (1 - confidence) / 2;
  long long c = 0;
  if (pairs <= kExactIntervalMaxPairs) {
    const auto& counts = cached_null_counts(static_cast<int>(n), static_cast<int>(m));
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    double below = 0;  // P(U <= c - 1)
    // The relative slack keeps an exactly attained level (1 - 0.8) / 2 = 2/20 from being lost to rounding.
    while (c < static_cast<long long>(counts.size()) && (below + counts[c]) / total <= tail * (1 + 1e-12)) below += counts[c++];
  } else {
    const double nm = static_cast<double>(pairs);
    const double s = std::sqrt(nm * (static_cast<double>(n + m) + 1) / 12);
    c = static_cast<long long>(std::floor(nm / 2 + 0.5 - normal_upper_quantile(tail) * s));
  }
  if (c >= 1 && static_cast<size_t>(c) <= pairs / 2) {
    out.lower = diffs[c - 1];
    out.upper = diffs[pairs - c];
    out.bounded = true;
  }
  return out;
}

double coefficient_of_variation(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  double ss = 0;
  for (double v : values) ss += (v - mean) * (v - mean);
  return mean > 0 ? std::sqrt(ss / (values.size() - 1)) / mean : 0;
}

double robust_coefficient_of_variation(const std::vector<double>& values) {
  if (values.size() < 3) return coefficient_of_variation(values);
  const double median = median_of(values);
  std::vector<double> deviations;
  for (double v : values) deviations.push_back(std::fabs(v - median));
  return median > 0 ? 1.4826 * median_of(deviations) / median : 0;
}

// ---------------------------------------------------------------------------------------------
// Loading

std::string match_key_of_case_id(const std::string& case_id) {
  const size_t at = case_id.rfind('@');
  if (at == std::string::npos) return case_id;
  const size_t colon = case_id.find(':', at);
  return colon == std::string::npos ? case_id : case_id.substr(0, colon);
}

namespace {

Status bad(const std::string& path, const std::string& where, const std::string& why) {
  return Status::bad_input(path + ": " + (where.empty() ? "" : where + ": ") + why);
}

// A string member, "" when absent; bad input when present with another type.
Result<std::string> string_member(const nlohmann::json& j, const char* key, const std::string& path, const std::string& where,
                                  bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return bad(path, where, std::string("no '") + key + "'");
    return std::string();
  }
  if (!it->is_string()) return bad(path, where, std::string("'") + key + "' is not a string");
  return it->get<std::string>();
}

Status check_header(const nlohmann::json& doc, const std::string& path, const std::string& where, const std::string& want_kind) {
  if (!doc.is_object()) return bad(path, where, "not a JSON object");
  auto version = doc.find("schema_version");
  if (version == doc.end()) return bad(path, where, "no 'schema_version' (files older than schema 1, such as the interim bench output, cannot be compared)");
  if (!version->is_number_integer() || version->get<int>() != 1)
    return bad(path, where, "schema_version " + version->dump() + " is not supported (this build reads 1)");
  auto kind = doc.find("kind");
  if (kind == doc.end() || !kind->is_string()) return bad(path, where, "no 'kind' (bench, check or baseline)");
  if (!want_kind.empty() && kind->get<std::string>() != want_kind)
    return bad(path, where, "kind is '" + kind->get<std::string>() + "', expected '" + want_kind + "'");
  return Status::ok();
}

Result<std::vector<BenchEntry>> parse_bench(const nlohmann::json& doc, const std::string& path, const std::string& where) {
  DNNB_TRY(check_header(doc, path, where, "bench"));
  auto results = doc.find("results");
  if (results == doc.end() || !results->is_array()) return bad(path, where, "no 'results' array");
  static const std::set<std::string> statuses = {"ok", "skipped", "unsupported", "error", "bad_input"};
  std::vector<BenchEntry> entries;
  std::map<std::string, std::string> seen;  // match key -> case id
  for (size_t i = 0; i < results->size(); ++i) {
    const auto& r = (*results)[i];
    const std::string at = (where.empty() ? "" : where + ": ") + "results[" + std::to_string(i) + "]";
    if (!r.is_object()) return bad(path, at, "not an object");
    BenchEntry e;
    auto id = string_member(r, "case_id", path, at, true);
    if (!id) return id.status();
    e.case_id = *id;
    const std::string ctx = at + " (" + e.case_id + ")";
    auto status = string_member(r, "status", path, ctx, true);
    if (!status) return status.status();
    e.status = *status;
    if (!statuses.count(e.status)) return bad(path, ctx, "unknown status '" + e.status + "'");
    for (auto [key, dst] : {std::pair{"device", &e.device}, {"device_name", &e.device_name}, {"reason", &e.reason}}) {
      auto v = string_member(r, key, path, ctx, false);
      if (!v) return v.status();
      *dst = *v;
    }
    e.match_key = match_key_of_case_id(e.case_id);
    if (e.status == "ok") {
      auto times = r.find("repetition_times_s");
      if (times == r.end() || !times->is_array() || times->empty())
        return bad(path, ctx, "status ok but no 'repetition_times_s' array");
      for (const auto& t : *times) {
        if (!t.is_number() || !(t.get<double>() > 0) || !std::isfinite(t.get<double>()))
          return bad(path, ctx, "repetition_times_s holds " + t.dump() + ": times must be positive numbers of seconds");
        e.repetition_times_s.push_back(t.get<double>());
      }
      e.median_s = median_of(e.repetition_times_s);
      if (auto m = r.find("median_s"); m != r.end() && m->is_number() && m->get<double>() > 0) e.median_s = m->get<double>();
      e.cv = coefficient_of_variation(e.repetition_times_s);
      if (auto cv = r.find("cv"); cv != r.end() && cv->is_number() && cv->get<double>() >= 0) e.cv = cv->get<double>();
      e.robust_cv = e.repetition_times_s.size() >= 3 ? robust_coefficient_of_variation(e.repetition_times_s) : e.cv;
    }
    auto [it, inserted] = seen.emplace(e.match_key, e.case_id);
    if (!inserted)
      return bad(path, ctx, "case '" + e.match_key + "' appears twice ('" + it->second + "' and '" + e.case_id +
                                "'): compare one device's results at a time (bench --device)");
    entries.push_back(std::move(e));
  }
  return entries;
}

Result<std::vector<CheckEntry>> parse_check(const nlohmann::json& doc, const std::string& path, const std::string& where) {
  DNNB_TRY(check_header(doc, path, where, "check"));
  auto cases = doc.find("cases");
  if (cases == doc.end() || !cases->is_array()) return bad(path, where, "no 'cases' array");
  static const std::set<std::string> verdicts = {"PASS", "FAIL", "XFAIL", "SKIP", "UNSUPPORTED", "BAD_INPUT", "ERROR", "TIMEOUT"};
  std::vector<CheckEntry> entries;
  std::map<std::string, std::string> seen;
  for (size_t i = 0; i < cases->size(); ++i) {
    const auto& c = (*cases)[i];
    const std::string at = (where.empty() ? "" : where + ": ") + "cases[" + std::to_string(i) + "]";
    if (!c.is_object()) return bad(path, at, "not an object");
    CheckEntry e;
    auto id = string_member(c, "case", path, at, true);
    if (!id) return id.status();
    e.case_id = *id;
    const std::string ctx = at + " (" + e.case_id + ")";
    auto verdict = string_member(c, "verdict", path, ctx, true);
    if (!verdict) return verdict.status();
    e.verdict = *verdict;
    if (!verdicts.count(e.verdict)) return bad(path, ctx, "unknown verdict '" + e.verdict + "'");
    auto device = string_member(c, "device", path, ctx, false);
    auto reason = string_member(c, "reason", path, ctx, false);
    if (!device) return device.status();
    if (!reason) return reason.status();
    e.device = *device;
    e.reason = *reason;
    e.match_key = match_key_of_case_id(e.case_id);
    auto [it, inserted] = seen.emplace(e.match_key, e.case_id);
    if (!inserted)
      return bad(path, ctx, "case '" + e.match_key + "' appears twice ('" + it->second + "' and '" + e.case_id +
                                "'): compare one device's results at a time (check --device)");
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace

Result<ResultsFile> parse_results_json(const nlohmann::json& doc, const std::string& path) {
  DNNB_TRY(check_header(doc, path, "", ""));
  ResultsFile file;
  file.path = path;
  file.kind = doc["kind"].get<std::string>();
  if (file.kind == "bench") {
    auto b = parse_bench(doc, path, "");
    if (!b) return b.status();
    file.bench = std::move(*b);
  } else if (file.kind == "check") {
    auto c = parse_check(doc, path, "");
    if (!c) return c.status();
    file.check = std::move(*c);
  } else if (file.kind == "baseline") {
    auto model = string_member(doc, "device_model", path, "", true);
    if (!model) return model.status();
    if (model->empty()) return bad(path, "", "'device_model' is empty");
    file.device_model = *model;
    if (auto b = doc.find("bench"); b != doc.end() && !b->is_null()) {
      auto entries = parse_bench(*b, path, "bench");
      if (!entries) return entries.status();
      file.bench = std::move(*entries);
    }
    if (auto c = doc.find("check"); c != doc.end() && !c->is_null()) {
      auto entries = parse_check(*c, path, "check");
      if (!entries) return entries.status();
      file.check = std::move(*entries);
    }
    if (!file.bench && !file.check) return bad(path, "", "a baseline needs 'bench', 'check' or both");
  } else {
    return bad(path, "", "kind '" + file.kind + "' cannot be compared (bench, check or baseline)");
  }
  return file;
}

Result<ResultsFile> load_results_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::bad_input(path + ": cannot read the file (missing or unreadable)");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return Status::bad_input(path + ": not valid JSON: " + e.what());
  }
  return parse_results_json(doc, path);
}

Status apply_rerun(ResultsFile& candidate, const ResultsFile& rerun, bool replace) {
  if (!rerun.bench) return Status::bad_input(rerun.path + ": a rerun must be a bench file (kind '" + rerun.kind + "')");
  if (!candidate.bench) return Status::bad_input(candidate.path + ": has no bench results for the rerun " + rerun.path + " to replace");
  for (const auto& r : *rerun.bench) {
    auto it = std::find_if(candidate.bench->begin(), candidate.bench->end(),
                           [&](const BenchEntry& e) { return e.match_key == r.match_key; });
    if (it == candidate.bench->end())
      return Status::bad_input(rerun.path + ": rerun case '" + r.case_id + "' is not in the candidate " + candidate.path);
    if (replace || it->status != "ok" || r.status != "ok") {
      *it = r;
      continue;
    }
    auto& times = it->repetition_times_s;
    times.insert(times.end(), r.repetition_times_s.begin(), r.repetition_times_s.end());
    it->median_s = median_of(times);
    it->cv = coefficient_of_variation(times);
    it->robust_cv = robust_coefficient_of_variation(times);
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Comparison

void drop_alternative_cases(ResultsFile& file) {
  auto alternative = [](const std::string& case_id) {
    auto id = CaseId::parse(case_id);
    return id && !id->variant.empty();
  };
  if (file.bench) std::erase_if(*file.bench, [&](const BenchEntry& e) { return alternative(e.case_id); });
  if (file.check) std::erase_if(*file.check, [&](const CheckEntry& e) { return alternative(e.case_id); });
}

const char* to_string(TimingVerdict verdict) {
  switch (verdict) {
    case TimingVerdict::same: return "same";
    case TimingVerdict::faster: return "faster";
    case TimingVerdict::regression: return "regression";
    case TimingVerdict::ambiguous: return "ambiguous";
    case TimingVerdict::now_failing: return "now failing";
  }
  return "?";
}

namespace {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * fraction);
  return buf;
}

std::vector<double> logs_of(const std::vector<double>& values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(std::log(v));
  return out;
}

}  // namespace

TimingComparison compare_timing(const BenchEntry& base, const BenchEntry& candidate, const CompareOptions& options) {
  TimingComparison t;
  t.match_key = base.match_key;
  t.base_case_id = base.case_id;
  t.candidate_case_id = candidate.case_id;
  t.device_name = candidate.device_name.empty() ? base.device_name : candidate.device_name;
  t.base_median_s = base.median_s;
  t.candidate_median_s = candidate.median_s;
  t.base_repetitions = static_cast<int>(base.repetition_times_s.size());
  t.candidate_repetitions = static_cast<int>(candidate.repetition_times_s.size());
  if (candidate.status == "error" || candidate.status == "bad_input") {
    t.verdict = TimingVerdict::now_failing;
    t.note = "ran in BASE, " + candidate.status + " in CANDIDATE: " + candidate.reason;
    return t;
  }
  // Times are compared as logs: the shift of log time is the log of the ratio, so the
  // interval is one of ratios and does not depend on the case's scale.
  const auto base_logs = logs_of(base.repetition_times_s), candidate_logs = logs_of(candidate.repetition_times_s);
  const ShiftInterval shift = hodges_lehmann_shift(base_logs, candidate_logs, 1 - options.alpha);
  t.change = std::expm1(shift.estimate);
  t.change_lower = shift.bounded ? std::expm1(shift.lower) : -1.0;
  t.change_upper = shift.bounded ? std::expm1(shift.upper) : std::numeric_limits<double>::infinity();
  t.p_value = mann_whitney_u(base.repetition_times_s, candidate.repetition_times_s, Alternative::two_sided).p_value;
  t.noise = options.robust_noise ? std::max(base.robust_cv, candidate.robust_cv) : std::max(base.cv, candidate.cv);
  t.threshold = std::max(options.threshold_pct / 100, options.noise_multiple * t.noise);
  const bool significant = t.p_value < options.alpha;
  const std::string limit = "threshold " + percent(t.threshold).substr(1);
  if (t.change > t.threshold && significant) {
    t.verdict = TimingVerdict::regression;
  } else if (t.change < -t.threshold && significant) {
    t.verdict = TimingVerdict::faster;
  } else if (shift.bounded && t.change_upper <= t.threshold) {
    t.verdict = TimingVerdict::same;
  } else {
    t.verdict = TimingVerdict::ambiguous;
    char p[32];
    std::snprintf(p, sizeof p, "%.3g", t.p_value);
    if (!shift.bounded)
      t.note = "too few repetitions (" + std::to_string(t.base_repetitions) + " and " + std::to_string(t.candidate_repetitions) +
               ") to bound the change";
    else if (t.change > t.threshold)
      t.note = "slower by " + percent(t.change) + " (over the " + limit + ") but not significant (p " + p + ")";
    else
      t.note = "the interval reaches " + percent(t.change_upper) + ", over the " + limit;
  }
  return t;
}

int BenchComparison::count(TimingVerdict verdict) const {
  return static_cast<int>(std::count_if(timings.begin(), timings.end(), [&](const TimingComparison& t) { return t.verdict == verdict; }));
}

int Comparison::regressions() const {
  int n = 0;
  if (bench) n += bench->count(TimingVerdict::regression) + bench->count(TimingVerdict::now_failing);
  if (check) n += static_cast<int>(check->regressions.size());
  return n;
}

int Comparison::ambiguous() const { return bench ? bench->count(TimingVerdict::ambiguous) : 0; }

int Comparison::exit_code(bool ambiguous_fails) const {
  return regressions() > 0 || (ambiguous_fails && ambiguous() > 0) ? 1 : 0;
}

std::string Comparison::verdict_line(bool ambiguous_fails) const {
  std::ostringstream s;
  s << (exit_code(ambiguous_fails) ? "FAIL" : "PASS") << ": ";
  if (bench) {
    s << bench->count(TimingVerdict::regression) << " slower, " << bench->count(TimingVerdict::now_failing) << " now failing, "
      << bench->count(TimingVerdict::ambiguous) << " ambiguous" << (ambiguous_fails ? " (failing)" : "") << ", "
      << bench->count(TimingVerdict::same) << " same, " << bench->count(TimingVerdict::faster) << " faster; "
      << bench->missing.size() + bench->not_measured.size() << " missing, " << bench->added.size() + bench->newly_measured.size()
      << " new";
    if (check) s << "; ";
  }
  if (check)
    s << "conformance: " << check->regressions.size() << " passed before and fail now, " << check->fixed.size() << " fixed, "
      << check->changed.size() << " other changes, of " << check->matched << " matched; " << check->missing.size() << " missing, "
      << check->added.size() << " new";
  return s.str();
}

namespace {

// Device models must agree: a baseline's device_model and the device_name of every matched
// case on either side.
Status check_device_models(const ResultsFile& base, const ResultsFile& candidate, std::string* models) {
  std::set<std::string> base_models, candidate_models;
  if (!base.device_model.empty()) base_models.insert(base.device_model);
  if (!candidate.device_model.empty()) candidate_models.insert(candidate.device_model);
  if (base.bench && candidate.bench) {
    std::map<std::string, const BenchEntry*> by_key;
    for (const auto& e : *base.bench) by_key[e.match_key] = &e;
    for (const auto& c : *candidate.bench) {
      auto it = by_key.find(c.match_key);
      if (it == by_key.end()) continue;
      if (!it->second->device_name.empty()) base_models.insert(it->second->device_name);
      if (!c.device_name.empty()) candidate_models.insert(c.device_name);
    }
  }
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& m : s) out += (out.empty() ? "'" : ", '") + m + "'";
    return out;
  };
  const std::set<std::string> all = [&] {
    std::set<std::string> u = base_models;
    u.insert(candidate_models.begin(), candidate_models.end());
    return u;
  }();
  *models = all.size() <= 1 ? (all.empty() ? "" : *all.begin()) : join(base_models) + " vs " + join(candidate_models);
  if (all.size() > 1)
    return Status::bad_input("device models differ: BASE " + base.path + " has " + join(base_models) + ", CANDIDATE " +
                             candidate.path + " has " + join(candidate_models) +
                             " (compare a device with the baseline of its model, or pass --allow-device-mismatch)");
  return Status::ok();
}

template <typename Entry>
Status require_common_case(const std::vector<Entry>& base, const std::vector<Entry>& candidate, const std::string& base_path,
                           const std::string& candidate_path, const char* what) {
  if (base.empty() || candidate.empty()) return Status::ok();
  std::set<std::string> keys;
  for (const auto& e : base) keys.insert(e.match_key);
  for (const auto& e : candidate)
    if (keys.count(e.match_key)) return Status::ok();
  return Status::bad_input(std::string("no ") + what + " case in common: BASE " + base_path + " has " + std::to_string(base.size()) +
                           " (e.g. '" + base.front().case_id + "'), CANDIDATE " + candidate_path + " has " +
                           std::to_string(candidate.size()) + " (e.g. '" + candidate.front().case_id + "')");
}

BenchComparison compare_bench(const std::vector<BenchEntry>& base, const std::vector<BenchEntry>& candidate,
                              const CompareOptions& options) {
  BenchComparison out;
  std::map<std::string, const BenchEntry*> candidate_by_key;
  for (const auto& c : candidate) candidate_by_key[c.match_key] = &c;
  std::set<std::string> base_keys;
  for (const auto& b : base) {
    base_keys.insert(b.match_key);
    auto it = candidate_by_key.find(b.match_key);
    if (it == candidate_by_key.end()) {
      out.missing.push_back({b.case_id, b.status, "", ""});
      continue;
    }
    const BenchEntry& c = *it->second;
    if (b.status == "ok" && (c.status == "ok" || c.status == "error" || c.status == "bad_input"))
      out.timings.push_back(compare_timing(b, c, options));
    else if (b.status == "ok")
      out.not_measured.push_back({c.case_id, b.status, c.status, c.reason});
    else if (c.status == "ok")
      out.newly_measured.push_back({c.case_id, b.status, c.status, ""});
  }
  for (const auto& c : candidate)
    if (!base_keys.count(c.match_key)) out.added.push_back({c.case_id, "", c.status, c.reason});
  return out;
}

CheckComparison compare_check(const std::vector<CheckEntry>& base, const std::vector<CheckEntry>& candidate) {
  CheckComparison out;
  std::map<std::string, const CheckEntry*> candidate_by_key;
  for (const auto& c : candidate) candidate_by_key[c.match_key] = &c;
  std::set<std::string> base_keys;
  auto failing = [](const std::string& v) { return v == "FAIL" || v == "ERROR" || v == "BAD_INPUT" || v == "TIMEOUT"; };
  for (const auto& b : base) {
    base_keys.insert(b.match_key);
    auto it = candidate_by_key.find(b.match_key);
    if (it == candidate_by_key.end()) {
      out.missing.push_back({b.case_id, b.verdict, "", ""});
      continue;
    }
    const CheckEntry& c = *it->second;
    ++out.matched;
    if (b.verdict == c.verdict) continue;
    StatusChange change{c.case_id, b.verdict, c.verdict, c.reason};
    if (b.verdict == "PASS" && failing(c.verdict)) out.regressions.push_back(change);
    else if (failing(b.verdict) && c.verdict == "PASS") out.fixed.push_back(change);
    else out.changed.push_back(change);
  }
  for (const auto& c : candidate)
    if (!base_keys.count(c.match_key)) out.added.push_back({c.case_id, "", c.verdict, c.reason});
  return out;
}

}  // namespace

Result<Comparison> compare_results(const ResultsFile& base, const ResultsFile& candidate, const CompareOptions& options) {
  Comparison out;
  out.base_path = base.path;
  out.candidate_path = candidate.path;
  const bool bench = base.bench && candidate.bench, check = base.check && candidate.check;
  if (!bench && !check)
    return Status::bad_input("nothing to compare: BASE " + base.path + " is a " + base.kind + " file" +
                             (base.kind == "baseline" ? std::string(base.bench ? " with bench" : "") + (base.check ? " with check" : "") : "") +
                             ", CANDIDATE " + candidate.path + " a " + candidate.kind + " file (compare bench with bench, check with check)");
  Status models = check_device_models(base, candidate, &out.device_models);
  if (!models && !options.allow_device_mismatch) return models;
  if (bench) {
    DNNB_TRY(require_common_case(*base.bench, *candidate.bench, base.path, candidate.path, "bench"));
    out.bench = compare_bench(*base.bench, *candidate.bench, options);
  }
  if (check) {
    DNNB_TRY(require_common_case(*base.check, *candidate.check, base.path, candidate.path, "check"));
    out.check = compare_check(*base.check, *candidate.check);
  }
  return out;
}

}  // namespace dnnb
