// Disposer: destroys what the event loop lets go of on a thread of its own.
// Some destructors take long: a replaced state of millions of keys frees
// them one by one, and an abandoned snapshot writer waits for the write it
// is in (at low priority, on a busy machine, seconds) and removes its
// file. The loop hands them over and goes on; they are destroyed in the
// order given. The destructor waits for everything handed over.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace ts::tsnode {

class Disposer {
 public:
  Disposer();
  ~Disposer();
  Disposer(const Disposer&) = delete;
  Disposer& operator=(const Disposer&) = delete;

  template <class T>
  void Dispose(std::unique_ptr<T> what) {
    if (what) Queue(std::shared_ptr<void>(std::move(what)));
  }
  // Blocks until everything handed over so far is destroyed.
  void Drain();
  // Whether everything handed over is destroyed.
  bool Idle();

 private:
  void Queue(std::shared_ptr<void> what);
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;       // the thread waits for work or stop
  std::condition_variable drained_;  // Drain waits for an empty queue
  std::deque<std::shared_ptr<void>> queue_;
  bool busy_ = false;  // the thread is destroying one
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ts::tsnode
