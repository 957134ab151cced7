// LatencyHistogram: fixed-memory latency recording for tsbench, in the
// manner of HdrHistogram: log-linear buckets over nanoseconds, exact below
// 256 ns and within 1/128 (0.8%) relative width above, so percentiles of any
// run length cost the same ~60 KiB and histograms of several threads merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ts::bench {

class LatencyHistogram {
 public:
  LatencyHistogram();

  // Records one sample of `ns` nanoseconds.
  void Record(uint64_t ns);
  // Adds every sample of `other` to this one.
  void Merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t min_ns() const { return count_ == 0 ? 0 : min_ns_; }
  uint64_t max_ns() const { return max_ns_; }
  double mean_ns() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_ns_) / static_cast<double>(count_); }

  // The q-th percentile (0 < q <= 100) by the nearest-rank definition: the
  // sample of rank ceil(q/100 * count), reported as the middle of its bucket
  // (clamped to [min, max], so it is exact for 100 and for values < 256 ns).
  // 0 when empty.
  uint64_t PercentileNs(double q) const;

  // Bucket arithmetic, exposed for tests: every value maps to one bucket,
  // and BucketLowNs(BucketOf(v)) <= v <= BucketHighNs(BucketOf(v)).
  static size_t BucketOf(uint64_t ns);
  static uint64_t BucketLowNs(size_t bucket);
  static uint64_t BucketHighNs(size_t bucket);
  static size_t BucketCount();

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ns_ = 0;
  uint64_t min_ns_ = UINT64_MAX;
  uint64_t max_ns_ = 0;
};

}  // namespace ts::bench
