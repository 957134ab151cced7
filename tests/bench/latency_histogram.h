// The latency histogram moved with tsbench to node/tsbench/; this header
// keeps the older include path working for the tests that name it.
#pragma once

#include "node/tsbench/latency_histogram.h"
