// LatencyHistogram; see latency_histogram.h.
//
// Layout: values below 2^kBits are their own bucket. A larger value with its
// highest set bit at position e (e >= kBits) keeps its top kBits bits: it
// falls in one of 2^(kBits-1) equal sub-buckets of [2^e, 2^(e+1)), each
// 2^(e-kBits+1) wide, i.e. at most 1/2^(kBits-1) of the value.
#include "node/tsbench/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>

namespace ts::bench {

namespace {

constexpr unsigned kBits = 8;
constexpr uint64_t kExact = uint64_t{1} << kBits;           // 256 exact buckets
constexpr uint64_t kHalf = uint64_t{1} << (kBits - 1);      // 128 sub-buckets per octave
constexpr size_t kBuckets = kExact + (64 - kBits) * kHalf;  // up to 2^64 - 1

}  // namespace

LatencyHistogram::LatencyHistogram() : counts_(kBuckets, 0) {}

size_t LatencyHistogram::BucketCount() { return kBuckets; }

size_t LatencyHistogram::BucketOf(uint64_t ns) {
  if (ns < kExact) return static_cast<size_t>(ns);
  unsigned e = 63u - static_cast<unsigned>(std::countl_zero(ns));  // highest set bit, >= kBits
  unsigned shift = e - kBits + 1;
  uint64_t sub = (ns >> shift) - kHalf;  // in [0, kHalf)
  size_t bucket = static_cast<size_t>(kExact + (e - kBits) * kHalf + sub);
  assert(bucket < kBuckets);
  return bucket;
}

uint64_t LatencyHistogram::BucketLowNs(size_t bucket) {
  assert(bucket < kBuckets);
  if (bucket < kExact) return bucket;
  size_t above = bucket - kExact;
  unsigned e = static_cast<unsigned>(above / kHalf) + kBits;
  unsigned shift = e - kBits + 1;
  return (kHalf + above % kHalf) << shift;
}

uint64_t LatencyHistogram::BucketHighNs(size_t bucket) {
  assert(bucket < kBuckets);
  if (bucket < kExact) return bucket;
  unsigned e = static_cast<unsigned>((bucket - kExact) / kHalf) + kBits;
  unsigned shift = e - kBits + 1;
  return BucketLowNs(bucket) + ((uint64_t{1} << shift) - 1);
}

void LatencyHistogram::Record(uint64_t ns) {
  ++counts_[BucketOf(ns)];
  ++count_;
  sum_ns_ += ns;
  min_ns_ = std::min(min_ns_, ns);
  max_ns_ = std::max(max_ns_, ns);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  assert(counts_.size() == other.counts_.size());
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ns_ += other.sum_ns_;
  min_ns_ = std::min(min_ns_, other.min_ns_);
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

uint64_t LatencyHistogram::PercentileNs(double q) const {
  assert(q > 0.0 && q <= 100.0);
  if (count_ == 0) return 0;
  // Nearest rank; the epsilon keeps 99.9% of 1000 at rank 999, not 1000,
  // when q/100 * count lands a rounding error above an integer.
  double exact = q / 100.0 * static_cast<double>(count_);
  uint64_t rank = static_cast<uint64_t>(std::ceil(exact - 1e-9));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      uint64_t low = BucketLowNs(i);
      uint64_t mid = low + (BucketHighNs(i) - low) / 2;
      return std::clamp(mid, min_ns_, max_ns_);
    }
  }
  assert(false && "counts_ sum below count_");
  return max_ns_;
}

}  // namespace ts::bench
