// tsbench's latency histogram: bucket arithmetic and nearest-rank percentiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tests/bench/latency_histogram.h"

namespace ts::bench {
namespace {

TEST(LatencyHistogram, BucketOf_everyValueLiesInItsBucketAndBucketsTile) {
  // Buckets are contiguous and cover every 64-bit value exactly once.
  for (size_t b = 0; b + 1 < LatencyHistogram::BucketCount(); ++b) {
    ASSERT_EQ(LatencyHistogram::BucketHighNs(b) + 1, LatencyHistogram::BucketLowNs(b + 1)) << "bucket " << b;
  }
  EXPECT_EQ(LatencyHistogram::BucketLowNs(0), 0u);
  EXPECT_EQ(LatencyHistogram::BucketHighNs(LatencyHistogram::BucketCount() - 1), UINT64_MAX);

  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = rng() >> (rng() % 64);
    size_t b = LatencyHistogram::BucketOf(v);
    ASSERT_LE(LatencyHistogram::BucketLowNs(b), v);
    ASSERT_GE(LatencyHistogram::BucketHighNs(b), v);
    // Width bounds the relative error: under 1/128 of the value above 256 ns.
    uint64_t width = LatencyHistogram::BucketHighNs(b) - LatencyHistogram::BucketLowNs(b) + 1;
    if (v >= 256)
      ASSERT_LE(width * 128, v) << v;
    else
      ASSERT_EQ(width, 1u) << v;
  }
}

TEST(LatencyHistogram, PercentileNs_emptyHistogramReportsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.PercentileNs(50), 0u);
  EXPECT_EQ(h.PercentileNs(100), 0u);
  EXPECT_EQ(h.max_ns(), 0u);
  EXPECT_EQ(h.mean_ns(), 0.0);
}

TEST(LatencyHistogram, PercentileNs_smallValuesAreExactByNearestRank) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 200; ++v) h.Record(v);  // all below 256: one bucket each
  // Nearest rank: p50 of 200 samples is the 100th smallest; p99 the 198th;
  // p99.9 the 200th (ceil(199.8)); p0.1 the first.
  EXPECT_EQ(h.PercentileNs(50), 100u);
  EXPECT_EQ(h.PercentileNs(99), 198u);
  EXPECT_EQ(h.PercentileNs(99.9), 200u);
  EXPECT_EQ(h.PercentileNs(0.1), 1u);
  EXPECT_EQ(h.PercentileNs(100), 200u);
  EXPECT_EQ(h.min_ns(), 1u);
  EXPECT_EQ(h.max_ns(), 200u);
  EXPECT_DOUBLE_EQ(h.mean_ns(), 100.5);
}

TEST(LatencyHistogram, PercentileNs_p999OfAThousandSamplesIsThe999th) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 1000; ++v) h.Record(v * 1000);  // 1 us .. 1 ms
  // 99.9% of 1000 is 999 up to rounding; the rank must not slip to 1000.
  ASSERT_NE(LatencyHistogram::BucketOf(999000), LatencyHistogram::BucketOf(1000000)) << "test needs distinct buckets";
  uint64_t p999 = h.PercentileNs(99.9);
  EXPECT_EQ(LatencyHistogram::BucketOf(p999), LatencyHistogram::BucketOf(999000)) << p999;
  EXPECT_NEAR(static_cast<double>(p999), 999000.0, 999000.0 / 128);
  EXPECT_EQ(h.PercentileNs(100), 1000000u);
}

TEST(LatencyHistogram, PercentileNs_matchesSortedSamplesWithinBucketPrecision) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> latency(std::log(500000.0), 0.8);  // ~0.5 ms median, long tail
  LatencyHistogram h;
  std::vector<uint64_t> samples;
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = static_cast<uint64_t>(latency(rng));
    samples.push_back(v);
    h.Record(v);
  }
  std::sort(samples.begin(), samples.end());
  for (double q : {50.0, 90.0, 99.0, 99.9, 99.99}) {
    size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(samples.size()) - 1e-9));
    double exact = static_cast<double>(samples[rank - 1]);
    EXPECT_NEAR(static_cast<double>(h.PercentileNs(q)), exact, exact / 128) << "q=" << q;
  }
  EXPECT_EQ(h.max_ns(), samples.back());
  EXPECT_EQ(h.min_ns(), samples.front());
}

TEST(LatencyHistogram, Merge_equalsRecordingEverythingInOne) {
  std::mt19937_64 rng(3);
  LatencyHistogram a, b, all;
  for (int i = 0; i < 5000; ++i) {
    uint64_t v = rng() % 10000000;
    (i % 3 == 0 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min_ns(), all.min_ns());
  EXPECT_EQ(a.max_ns(), all.max_ns());
  EXPECT_DOUBLE_EQ(a.mean_ns(), all.mean_ns());
  for (double q : {1.0, 50.0, 99.0, 99.9, 100.0}) EXPECT_EQ(a.PercentileNs(q), all.PercentileNs(q)) << q;
}

TEST(LatencyHistogram, Merge_ofAnEmptyHistogramChangesNothing) {
  LatencyHistogram a, empty;
  a.Record(1234567);
  a.Merge(empty);
  EXPECT_EQ(a.count(), 1u);
  EXPECT_EQ(a.min_ns(), 1234567u);
  EXPECT_EQ(a.PercentileNs(50), 1234567u);  // clamped to [min, max]: one sample is exact
}

}  // namespace
}  // namespace ts::bench
