// Disposer (node/tsnode/disposer.h): what the loop hands over is destroyed
// on the disposer's thread, in order, without the loop waiting for it.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "node/tsnode/disposer.h"

namespace ts::tsnode {
namespace {

// Destroyed only once `release` is set; records its id and thread.
struct Slow {
  Slow(int id, std::shared_future<void> release, std::mutex& mu, std::vector<int>& order,
       std::thread::id& destroyed_on)
      : id(id), release(std::move(release)), mu(mu), order(order), destroyed_on(destroyed_on) {}
  ~Slow() {
    release.wait();
    std::lock_guard lock(mu);
    order.push_back(id);
    destroyed_on = std::this_thread::get_id();
  }
  int id;
  std::shared_future<void> release;
  std::mutex& mu;
  std::vector<int>& order;
  std::thread::id& destroyed_on;
};

TEST(Disposer, DestroysOffTheCallersThreadInOrder_DrainWaitsForIt) {
  std::promise<void> go;
  std::shared_future<void> release = go.get_future().share();
  std::mutex mu;
  std::vector<int> order;
  std::thread::id destroyed_on;
  Disposer d;
  EXPECT_TRUE(d.Idle());
  for (int id = 1; id <= 3; ++id) d.Dispose(std::make_unique<Slow>(id, release, mu, order, destroyed_on));
  // The caller was not held: every destructor still waits for `release`.
  EXPECT_FALSE(d.Idle());
  {
    std::lock_guard lock(mu);
    EXPECT_TRUE(order.empty());
  }
  go.set_value();
  d.Drain();
  EXPECT_TRUE(d.Idle());
  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_NE(destroyed_on, std::this_thread::get_id());
}

TEST(Disposer, ItsDestructorDestroysWhatIsLeft) {
  std::promise<void> go;
  go.set_value();
  std::shared_future<void> release = go.get_future().share();
  std::mutex mu;
  std::vector<int> order;
  std::thread::id destroyed_on;
  {
    Disposer d;
    for (int id = 1; id <= 5; ++id) d.Dispose(std::make_unique<Slow>(id, release, mu, order, destroyed_on));
    d.Dispose(std::unique_ptr<Slow>());  // nothing: ignored
  }
  EXPECT_EQ(order.size(), 5u);
}

}  // namespace
}  // namespace ts::tsnode
