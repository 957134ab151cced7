// Endpoint resolution for tsctl/tsbench: parsing, errors, and the precedence
// --endpoints > $TSCTL_ENDPOINTS > ./.cluster/endpoints.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "node/client/endpoints.h"

namespace ts::client {
namespace {

namespace fs = std::filesystem;

std::string Joined(const StatusOr<std::vector<rpc::HostPort>>& r) {
  return r.ok() ? JoinEndpoints(*r) : "error: " + r.status().message();
}

TEST(ParseEndpointList, ListWithSpacesGivesEveryEndpointInOrder) {
  auto r = ParseEndpointList(" 127.0.0.1:7001, localhost:7002 ,10.0.0.3:65535", "--endpoints");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].host, "127.0.0.1");
  EXPECT_EQ((*r)[0].port, 7001);
  EXPECT_EQ((*r)[1].host, "localhost");
  EXPECT_EQ((*r)[2].port, 65535);
}

TEST(ParseEndpointList, MalformedListsAreErrorsNamingTheSourceAndText) {
  struct Case {
    const char* text;
    const char* mentions;
  };
  for (const Case& c : {Case{"", "empty endpoint list"}, Case{"a:1,,b:2", "empty item"}, Case{"a:1,", "empty item"},
                        Case{"hostonly", "hostonly"}, Case{"a:http", "a:http"}, Case{"a:0", "a:0"},
                        Case{"a:70000", "a:70000"}, Case{":7001", ":7001"}, Case{"a:1,a:1", "listed twice"}}) {
    auto r = ParseEndpointList(c.text, "--endpoints");
    ASSERT_FALSE(r.ok()) << "accepted '" << c.text << "'";
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind("--endpoints", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find(c.mentions), std::string::npos) << r.status().message();
  }
}

TEST(ParseEndpointsFile, CommentsBlankLinesAndCrlfAreIgnored) {
  auto r = ParseEndpointsFile("# written by local-cluster.sh\n\n127.0.0.1:7001\r\n  127.0.0.1:7002  # node 2\n\n",
                              ".cluster/endpoints");
  EXPECT_EQ(Joined(r), "127.0.0.1:7001,127.0.0.1:7002");
}

TEST(ParseEndpointsFile, BadLineIsAnErrorWithItsLineNumber) {
  auto r = ParseEndpointsFile("127.0.0.1:7001\n# ok\nnot-an-endpoint\n", ".cluster/endpoints");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(".cluster/endpoints:3"), std::string::npos) << r.status().message();
}

TEST(ParseEndpointsFile, FileWithOnlyCommentsIsAnError) {
  auto r = ParseEndpointsFile("# nothing yet\n\n", ".cluster/endpoints");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no endpoint"), std::string::npos) << r.status().message();
}

// Runs each test in a fresh temporary directory with $TSCTL_ENDPOINTS unset,
// restoring both afterwards.
class ResolveEndpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_cwd_ = fs::current_path();
    const char* env = std::getenv(kEndpointsEnvVar);
    if (env != nullptr) old_env_ = env;
    const char* cluster_dir = std::getenv(kClusterDirEnvVar);
    if (cluster_dir != nullptr) old_cluster_dir_ = cluster_dir;
    ::unsetenv(kClusterDirEnvVar);
    dir_ = fs::temp_directory_path() / ("ts_endpoints_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::current_path(dir_);
    ::unsetenv(kEndpointsEnvVar);
  }
  void TearDown() override {
    fs::current_path(old_cwd_);
    fs::remove_all(dir_);
    if (old_env_)
      ::setenv(kEndpointsEnvVar, old_env_->c_str(), 1);
    else
      ::unsetenv(kEndpointsEnvVar);
    if (old_cluster_dir_)
      ::setenv(kClusterDirEnvVar, old_cluster_dir_->c_str(), 1);
    else
      ::unsetenv(kClusterDirEnvVar);
  }
  void WriteFile(const std::string& contents) {
    fs::create_directories(dir_ / ".cluster");
    std::ofstream(dir_ / ".cluster" / "endpoints") << contents;
  }

  fs::path dir_;
  fs::path old_cwd_;
  std::optional<std::string> old_env_;
  std::optional<std::string> old_cluster_dir_;
};

TEST_F(ResolveEndpointsTest, FlagWinsOverEnvironmentAndFile) {
  ::setenv(kEndpointsEnvVar, "10.0.0.2:2", 1);
  WriteFile("10.0.0.3:3\n");
  EXPECT_EQ(Joined(ResolveEndpoints("10.0.0.1:1")), "10.0.0.1:1");
}

TEST_F(ResolveEndpointsTest, EnvironmentWinsOverFileWhenNoFlag) {
  ::setenv(kEndpointsEnvVar, "10.0.0.2:2,10.0.0.4:4", 1);
  WriteFile("10.0.0.3:3\n");
  EXPECT_EQ(Joined(ResolveEndpoints("")), "10.0.0.2:2,10.0.0.4:4");
}

TEST_F(ResolveEndpointsTest, FileIsUsedWhenNeitherFlagNorEnvironment) {
  WriteFile("# cluster\n10.0.0.3:3\n10.0.0.5:5\n");
  EXPECT_EQ(Joined(ResolveEndpoints("")), "10.0.0.3:3,10.0.0.5:5");
}

// local-cluster.sh keeps its cluster in $CLUSTER_DIR when that is set: the
// endpoints file there wins over ./.cluster/endpoints, and is named when absent.
TEST_F(ResolveEndpointsTest, ClusterDirNamesTheFileLocalClusterWrote) {
  WriteFile("10.0.0.3:3\n");
  fs::create_directories(dir_ / "elsewhere");
  std::ofstream(dir_ / "elsewhere" / "endpoints") << "10.0.0.7:7\n";
  ::setenv(kClusterDirEnvVar, (dir_ / "elsewhere").c_str(), 1);
  EXPECT_EQ(Joined(ResolveEndpoints("")), "10.0.0.7:7");
  ::setenv(kClusterDirEnvVar, (dir_ / "absent").c_str(), 1);
  auto r = ResolveEndpoints("");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find((dir_ / "absent" / "endpoints").string()), std::string::npos)
      << r.status().message();
}

TEST_F(ResolveEndpointsTest, EmptyEnvironmentVariableCountsAsUnset) {
  ::setenv(kEndpointsEnvVar, "  ", 1);
  WriteFile("10.0.0.3:3\n");
  EXPECT_EQ(Joined(ResolveEndpoints("")), "10.0.0.3:3");
}

TEST_F(ResolveEndpointsTest, MalformedEnvironmentIsAnErrorNotAFallThrough) {
  ::setenv(kEndpointsEnvVar, "10.0.0.2", 1);
  WriteFile("10.0.0.3:3\n");
  auto r = ResolveEndpoints("");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("$TSCTL_ENDPOINTS"), std::string::npos) << r.status().message();
}

TEST_F(ResolveEndpointsTest, NoSourceGivesAnErrorNamingAllThree) {
  auto r = ResolveEndpoints("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("--endpoints"), std::string::npos) << m;
  EXPECT_NE(m.find("$TSCTL_ENDPOINTS"), std::string::npos) << m;
  EXPECT_NE(m.find(".cluster/endpoints"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << "must fit the one-line error contract";
}

TEST_F(ResolveEndpointsTest, EmptyFileIsAnErrorNamingTheFile) {
  WriteFile("\n# no nodes\n");
  auto r = ResolveEndpoints("");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(".cluster/endpoints"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ts::client
