// `crucible demo --store s3`: the S3-compatible server the tests use (a
// one-node Ceph radosgw that checks SigV4, scripts/s3/start_s3.sh) on free
// ports under the demo's folder, and for each node a user owning its own
// bucket plus a read-only subuser, whose keys the node publishes for the
// others (the way an operator gives validators read access to an R2 bucket).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "crucible/common/status.h"
#include "crucible/storage/storage_options.h"

namespace crucible::cli {

class DemoS3 {
 public:
  // Starts the server (its log in log_dir/s3.log); stopped by the destructor.
  static Result<std::unique_ptr<DemoS3>> start(const std::filesystem::path& run, const std::filesystem::path& log_dir);
  ~DemoS3();
  DemoS3(const DemoS3&) = delete;
  DemoS3& operator=(const DemoS3&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  // Creates node `name`'s user, read-only subuser and bucket; the [storage]
  // section of its config (URL and both key pairs).
  Result<std::string> storage_section(const std::string& name);
  // The same, as options: user `name` (with its read-only subuser) and its
  // bucket "crucible-<name>".
  Result<storage::StorageOptions> user(const std::string& name);
  // Another bucket owned by the user whose keys `user` holds; its options.
  Result<storage::StorageOptions> bucket(storage::StorageOptions user, const std::string& bucket);

 private:
  DemoS3() = default;
  std::filesystem::path ceph_dir_;
  std::string endpoint_;
};

}  // namespace crucible::cli
