// FileRemover: queued files are removed off the caller's thread, Wait sees
// them gone, a missing path is no error, a failure is reported once and
// names the file, a descriptor handed over is closed by Wait, and a remover
// destroyed with work queued returns and leaves the rest to the next one.
#include "storage/file_remover.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ts::storage {
namespace {

namespace fs = std::filesystem;

class FileRemoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ts-remover-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Make(const std::string& name, size_t bytes = 1000) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
    EXPECT_TRUE(fs::exists(path)) << path;
    return path;
  }

  std::string dir_;
};

TEST_F(FileRemoverTest, Remove_TheQueuedFilesAreGoneAfterWait) {
  FileRemover r;
  const std::string a = Make("a", 8 << 20), b = Make("b"), keep = Make("keep");
  r.Remove({a, b, a});  // a duplicate is queued once
  r.Wait();
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(fs::exists(b));
  EXPECT_TRUE(fs::exists(keep));
  EXPECT_TRUE(r.TakeError().ok());
  // Used again after draining; a path already gone is no error.
  const std::string c = Make("c");
  r.Remove({c, dir_ + "/never-there"});
  r.Wait();
  EXPECT_FALSE(fs::exists(c));
  EXPECT_TRUE(r.TakeError().ok());
}

// The descriptor of a file with no name left is closed on the thread (where
// the kernel frees the blocks it held), and Wait waits for that too.
TEST_F(FileRemoverTest, Close_TheDescriptorOfAnUnlinkedFileIsClosedByWait) {
  FileRemover r;
  std::string path = Make("abandoned.part", 1 << 20);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);  // nameless but open: its blocks are still held
  r.Close(fd);
  r.Wait();
  errno = 0;
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_TRUE(r.TakeError().ok());
}

TEST_F(FileRemoverTest, TakeError_NamesTheFileThatCouldNotBeRemovedOnce) {
  FileRemover r;
  const std::string sub = dir_ + "/a-directory";
  fs::create_directory(sub);
  const std::string after = Make("after");
  r.Remove({sub, after});  // unlink refuses a directory
  r.Wait();
  Status e = r.TakeError();
  EXPECT_EQ(e.code(), Status::Code::kIoError);
  EXPECT_NE(e.message().find(sub), std::string::npos) << e.ToString();
  EXPECT_TRUE(r.TakeError().ok());  // reported once
  EXPECT_FALSE(fs::exists(after));  // a failure does not stop the queue
}

// The destructor drops what it had not started; a later remover given the
// same list (as the next scan finds it) finishes the job, the files the
// first one did remove being no error.
TEST_F(FileRemoverTest, Destructor_DropsTheQueueAndALaterRemoverFinishesIt) {
  std::vector<std::string> paths;
  for (int i = 0; i < 200; ++i) paths.push_back(Make("f" + std::to_string(i)));
  {
    FileRemover r;
    r.Remove(paths);
  }
  FileRemover later;
  later.Remove(paths);
  later.Wait();
  EXPECT_TRUE(later.TakeError().ok());
  for (const auto& p : paths) EXPECT_FALSE(fs::exists(p)) << p;
}

}  // namespace
}  // namespace ts::storage
