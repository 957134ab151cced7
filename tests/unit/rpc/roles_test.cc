// Client roles (rpc/roles.h): which operation needs which role, and the role
// a certificate's subject grants.
#include <gtest/gtest.h>

#include "rpc/roles.h"

namespace ts::rpc {
namespace {

TEST(Roles, EveryOperationNeedsTheRoleTheDesignGivesIt) {
  for (ClientOp op : {ClientOp::kGet, ClientOp::kStatus, ClientOp::kLog, ClientOp::kDeployQuery}) {
    EXPECT_EQ(RequiredRole(op), ClientRole::kRead) << static_cast<int>(op);
  }
  for (ClientOp op : {ClientOp::kPut, ClientOp::kCas, ClientOp::kDelete}) {
    EXPECT_EQ(RequiredRole(op), ClientRole::kWrite) << static_cast<int>(op);
  }
  for (ClientOp op : {ClientOp::kDowngrade, ClientOp::kDowngradeCancel, ClientOp::kDeploy, ClientOp::kFault,
                      ClientOp::kMember, ClientOp::kSnapshot, ClientOp::kSnapshotRead, ClientOp::kMigrate}) {
    EXPECT_EQ(RequiredRole(op), ClientRole::kAdmin) << static_cast<int>(op);
  }
  // Every op of the protocol is listed above: an op added later without a
  // role falls to admin, the most demanding.
  EXPECT_EQ(RequiredRole(static_cast<ClientOp>(200)), ClientRole::kAdmin);
  EXPECT_LT(ClientRole::kRead, ClientRole::kWrite);
  EXPECT_LT(ClientRole::kWrite, ClientRole::kAdmin);
}

TEST(Roles, ACertificateGrantsItsOuOnItsOwnClusterOnly) {
  CertIdentity c{true, "tsctl-read", "prod", "read"};
  EXPECT_EQ(*RoleOf(c, "prod"), ClientRole::kRead);
  c.unit = "write";
  EXPECT_EQ(*RoleOf(c, "prod"), ClientRole::kWrite);
  c.unit = "admin";
  EXPECT_EQ(*RoleOf(c, "prod"), ClientRole::kAdmin);
  c.unit = "node";
  EXPECT_EQ(*RoleOf(c, "prod"), ClientRole::kAdmin);

  auto other = RoleOf(c, "staging");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Status::Code::kPermissionDenied);
  EXPECT_NE(other.status().message().find("'prod', not 'staging'"), std::string::npos);
  c.unit = "root";
  auto none = RoleOf(c, "prod");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("OU must be read, write or admin"), std::string::npos);
  EXPECT_FALSE(RoleOf(CertIdentity{}, "prod").ok());
}

}  // namespace
}  // namespace ts::rpc
